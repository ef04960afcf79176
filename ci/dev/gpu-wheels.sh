#!/usr/bin/env bash
# The pure-Python wheels of the test dependencies that a GPU machine's environment may lack, for an
# offline GPU check (`ci/release/gpu_check.py --wheels DEST`, docs/maintainers/gpu-check.md): downloaded here into DEST
# (default .gpu-wheels/, ignored by git), at the versions of ci/release/locks/gpu-smoke.txt.
#
#   ci/dev/gpu-wheels.sh [DEST [PYTHON_VERSION]]   # PYTHON_VERSION: the GPU machine's (default: $PYTHON's)
#
# The GPU machine must have numpy, pytest, scikit-learn, CuPy and NVRTC for its CUDA, and pybind11
# and setuptools for the in-place build. One version of each wheel is kept (two would stop the install).
set -euo pipefail
NAMES=(array-api-strict tqdm pytest-timeout wheel hypothesis sortedcontainers)
cd "$(dirname "$0")/../.."
dest=${1:-.gpu-wheels}
python=${PYTHON:-python3}
version=${2:-$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
mkdir -p "$dest"

keep=()
for name in "${NAMES[@]}"; do
  pin=$(grep -m1 -i "^$name==" ci/release/locks/gpu-smoke.txt | cut -d' ' -f1) \
    || { echo "gpu-wheels: $name is not in ci/release/locks/gpu-smoke.txt" >&2; exit 1; }
  prefix="${name//-/_}-${pin#*==}-"
  keep+=("$prefix")
  if ! compgen -G "$dest/$prefix*.whl" >/dev/null; then
    "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
      --python-version "$version" --implementation cp -d "$dest" "$pin"
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
