#!/usr/bin/env bash
# cibuildwheel's repair step: auditwheel bundles libcudart, libcublas and libcublasLt into the
# wheel (hash-renamed, found through an $ORIGIN-relative RPATH) and never the driver.
# ci/check_wheel.py then holds the result to the wheel contract.
#
# Usage: ci/repair-wheel.sh WHEEL DEST_DIR   (needs CUDA_HOME, auditwheel and patchelf)
set -euo pipefail
wheel=$1
dest=$2
plat=${TINYTENSOR_PLAT:-manylinux_2_28_$(uname -m)}
: "${CUDA_HOME:?CUDA_HOME must name the toolkit the wheel was built against}"
# auditwheel resolves the extension's DT_NEEDED entries through LD_LIBRARY_PATH.
export LD_LIBRARY_PATH="$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
started=$(date +%s)
auditwheel repair --plat "$plat" --exclude libcuda.so.1 -w "$dest" "$wheel"
echo "repair-wheel: repaired to $plat in $(( $(date +%s) - started )) s" >&2
