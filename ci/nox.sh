#!/usr/bin/env bash
# Run nox from a tools environment this script creates on first use (outside the repository),
# so a fresh machine needs nothing but python3: `ci/nox.sh -t ci`, `ci/nox.sh -s release`.
set -euo pipefail
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
tools=$cache/tools
stamp=$tools/.nox-2026.10.20-uv-0.13.9
if [ ! -f "$stamp" ]; then
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check "nox==2026.10.20" "uv==0.13.9"
  touch "$stamp"
fi
export PATH="$tools/bin:$PATH"
cd "$(dirname "$0")/.."
exec nox "$@"
