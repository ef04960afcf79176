#!/usr/bin/env bash
# The pure-Python wheels the test suite needs that an offline GPU machine (Python 3.12, no network)
# lacks, downloaded here into .gpu-wheels/ (ignored by git), for a device command to name in
# `carry` and `ci/release/gpu_check.py --wheels .gpu-wheels` to install offline.
#
#   array-api-strict  the "strict:device1" fake device of the op suite (tests/conftest.py); not there
#   tqdm              tinytensor's dependency for progress bars (tests/test_utils.py); listed as
#                     there in 2026-11, carried anyway (80 kB) so the check does not depend on it
#   wheel             ci/release/placeholders.py (`wheel pack`), which tests/test_publish.py runs
#
# Their only requirement, numpy, is on that machine. Versions are pinned; one version of each is
# kept (two would stop the install). About 0.3 MB in all: far below the 64 MiB a run may carry.
set -euo pipefail
PINS=(array-api-strict==2.6.1 tqdm==4.70.1 wheel==0.48.0)
cd "$(dirname "$0")/../.."
dest=${1:-.gpu-wheels}
python=${PYTHON:-python3}
mkdir -p "$dest"

keep=()
for pin in "${PINS[@]}"; do
  name=${pin%%==*} version=${pin#*==}
  prefix="${name//-/_}-$version-"
  keep+=("$prefix")
  if ! compgen -G "$dest/$prefix*.whl" >/dev/null; then
    "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
      --python-version 3.12 --implementation cp -d "$dest" "$pin"
  fi
done
# drop any other wheel (an older pin) so exactly one version of each travels
for wheel in "$dest"/*.whl; do
  base=$(basename "$wheel") wanted=0
  for prefix in "${keep[@]}"; do [[ $base == "$prefix"* ]] && wanted=1; done
  if [ "$wanted" = 0 ]; then rm -f "$wheel"; echo "removed $base (not pinned)"; fi
done
for prefix in "${keep[@]}"; do
  compgen -G "$dest/$prefix*.whl" >/dev/null || { echo "gpu-wheels: ${prefix%-} missing from $dest" >&2; exit 1; }
done
ls -l "$dest"
echo "gpu-wheels: $(du -sk "$dest" | cut -f1) kB in $dest"
