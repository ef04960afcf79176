#!/usr/bin/env bash
# Run nox from a tools environment this script creates on first use (outside the repository),
# so a fresh machine needs nothing but python3: `ci/nox.sh -s release`, `ci/nox.sh -s lint`.
# The tools' pins are pyproject.toml's `nox` dependency group.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
tools=$cache/tools
mapfile -t pins < <(python3 -c '
import tomllib
for pin in tomllib.load(open("pyproject.toml", "rb"))["dependency-groups"]["nox"]:
    print(pin)')
stamp=$tools/.pins-$(printf '%s-' "${pins[@]}" | tr '=<>' '___')
if [ ! -f "$stamp" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}"
  touch "$stamp"
fi
export PATH="$tools/bin:$PATH"
# A full CI run (ci/tests.sh) from empty caches fills up to about this much disk, most of it caches:
# warn early rather than fail on a full disk half an hour in.
need_kb=$((16 * 1000 * 1000 * 1000 / 1024))
mkdir -p "$cache"
free_kb=$(df -Pk "$cache" | awk 'NR==2 {print $4}')
if [ "${free_kb:-0}" -lt "$need_kb" ]; then
  echo "ci/nox.sh: WARNING: $((free_kb / 1024)) MB free where the caches go ($cache); a full CI run from empty caches needs about 16 GB" >&2
fi
# The release matrix's newest CPython (buildsys/release_matrix.py), for tests_cpu and the cp314
# wheel, where none is installed (ci/dev/install-python.sh: Debian testing's build, bundled).
if ! command -v python3.14 >/dev/null && ! compgen -G "$HOME/.pyenv/versions/3.14.*/bin/python3.14" >/dev/null \
  && command -v apt-get >/dev/null; then
  ci/dev/install-python.sh 3.14 >/dev/null
fi
exec nox "$@"
