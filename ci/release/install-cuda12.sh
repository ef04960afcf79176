#!/usr/bin/env bash
# Install the pinned CUDA 12 toolchain (ci/release/cuda12-versions.env) on this machine, with a
# host compiler nvcc accepts, and print `export CUDAHOSTCXX=...` and then `export CUDA_HOME=...` as
# the last line.
#
#   Debian (this project's dev and CI machines): nvcc from Debian trixie's non-free
#     nvidia-cuda-toolkit, fetched with a private APT configuration (bookworm's own sources are
#     untouched) and unpacked with dpkg -x; headers and libraries from PyPI's nvidia-* wheels.
#     PyPI's nvidia-cuda-nvcc-cu12 has no nvcc binary, hence Debian. Nothing is installed into /.
#   RHEL family (manylinux_2_28 containers): NVIDIA's dnf repository, whose URL comes from
#     $CUDA_RHEL_REPO (workflow configuration), never from this file.
#   The host compiler: a distribution's default GCC may be newer than nvcc accepts (manylinux_2_28's
#     is gcc-toolset-14; nvcc 12.4 stops at 13). On RHEL, gcc-toolset-13 is installed from
#     AlmaLinux 8's AppStream; on Debian (nothing installed), the newest installed g++ nvcc accepts
#     is taken. It is linked as PREFIX/host-compiler/g++, which the build gets as CUDAHOSTCXX.
#
# Usage: ci/release/install-cuda12.sh [PREFIX]   (default: ~/.cache/pytinytensor/cuda-<version>)
# The Debian path needs apt-get and dpkg (no root: APT state is private); RHEL needs root.
# Idempotent: a complete PREFIX is reused. An incomplete one is deleted and made again only if this
# script made it (its marker file, .pytinytensor-cuda12, is there) or it is empty; any other
# existing PREFIX is refused, since it may hold someone else's files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=ci/release/cuda12-versions.env
. "$here/cuda12-versions.env"
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
prefix=${1:-$cache/cuda-$CUDA_VERSION}
log() { echo "install-cuda12: $*" >&2; }
marker=.pytinytensor-cuda12  # written into PREFIX when this script creates it

check_nvcc() {  # the assembled nvcc must say release $CUDA_VERSION
  "$1/bin/nvcc" --version 2>/dev/null | grep -q "release $CUDA_VERSION,"
}

. /etc/os-release
case " ${ID:-} ${ID_LIKE:-} " in
  *" debian "*) family=debian ;;
  *" rhel "*|*" fedora "*|*" centos "*) family=rhel ;;
  *) family=other ;;
esac

gcc_major() { "$1" -dumpversion 2>/dev/null | cut -d. -f1; }

host_compiler() {  # link a g++ that nvcc accepts as $1/host-compiler/g++ and print the exports
  local cxx="" candidate
  if [ "$family" = rhel ]; then
    [ -x "$HOST_GCC_RHEL" ] || dnf install -y -q "$HOST_GCC_RHEL_PACKAGE" >&2 || true
    [ -x "$HOST_GCC_RHEL" ] && cxx=$HOST_GCC_RHEL
  fi
  if [ -z "$cxx" ]; then  # the newest installed g++ that nvcc accepts
    for candidate in $(compgen -c g++- | grep -E '^g\+\+-[0-9]+$' | sort -t- -k2 -n -r) g++; do
      command -v "$candidate" >/dev/null || continue
      major=$(gcc_major "$candidate")
      if [ -n "$major" ] && [ "$major" -le "$NVCC_MAX_GCC" ]; then cxx=$(command -v "$candidate"); break; fi
    done
  fi
  if [ -z "$cxx" ]; then
    log "no g++ that nvcc $CUDA_VERSION accepts (GCC <= $NVCC_MAX_GCC) is installed or installable here"
    log "(the default g++ is GCC $(gcc_major g++ || echo none)); install one and set CUDAHOSTCXX to it"
    exit 1
  fi
  major=$(gcc_major "$cxx")
  if [ -z "$major" ] || [ "$major" -gt "$NVCC_MAX_GCC" ]; then
    log "$cxx is GCC ${major:-unknown}, newer than nvcc $CUDA_VERSION accepts (<= $NVCC_MAX_GCC)"; exit 1
  fi
  mkdir -p "$1/host-compiler"
  ln -sfn "$cxx" "$1/host-compiler/g++"
  log "nvcc's host compiler: $cxx (GCC $("$cxx" -dumpfullversion 2>/dev/null || echo "$major"))"
  echo "export CUDAHOSTCXX=$1/host-compiler/g++"
  echo "export CUDA_HOME=$1"
}

if [ -f "$prefix/.complete" ] && check_nvcc "$prefix"; then
  log "reusing $prefix"
  host_compiler "$prefix"
  exit 0
fi

if [ "$family" = other ]; then
  log "unsupported OS ${ID:-unknown}: install CUDA $CUDA_VERSION yourself and set CUDA_HOME"; exit 1
fi

if [ "$family" = rhel ]; then
  if [ -z "${CUDA_RHEL_REPO:-}" ]; then
    log "set CUDA_RHEL_REPO to NVIDIA's CUDA repository file for this RHEL release and architecture"
    exit 1
  fi
  dnf install -y -q dnf-plugins-core >&2
  dnf config-manager --add-repo "$CUDA_RHEL_REPO" >&2
  # shellcheck disable=SC2086 # a list of packages
  dnf install -y -q $DNF_PACKAGES >&2
  dnf clean all >&2
  prefix=/usr/local/cuda-$CUDA_VERSION
  check_nvcc "$prefix" || { log "nvcc in $prefix is not release $CUDA_VERSION"; exit 1; }
  touch "$prefix/.complete"
  host_compiler "$prefix"
  exit 0
fi

# ---------------------------------------------------------------- Debian
if [ -e "$prefix" ] && [ ! -f "$prefix/$marker" ] && [ -n "$(ls -A "$prefix" 2>&1)" ]; then
  log "refusing to replace $prefix: it exists, is not empty and was not made by this script (no $marker in it)."
  log "Remove it yourself, or give another PREFIX."
  exit 1
fi
work=$cache/cuda-$CUDA_VERSION-parts
rm -rf "$prefix" "$work/root" "$work/pypi"
mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/debs" "$prefix"
echo "made by ci/release/install-cuda12.sh, which may delete and remake this folder" >"$prefix/$marker"

mirror=$("$here/debian-mirror.sh")
echo "deb $mirror trixie non-free" >"$work/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache::Archives=$work/apt/archives"
  -o APT::Sandbox::User=root -o Debug::NoLocking=1)
log "fetching nvidia-cuda-toolkit $DEB_CUDA_TOOLKIT_VERSION from $mirror trixie non-free"
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download \
  "nvidia-cuda-toolkit=$DEB_CUDA_TOOLKIT_VERSION" "libnvvm4=$DEB_CUDA_TOOLKIT_VERSION" >&2)
for deb in "$work"/debs/nvidia-cuda-toolkit_*.deb "$work"/debs/libnvvm4_*.deb; do
  dpkg -x "$deb" "$work/root"
done

log "fetching headers and libraries from PyPI"
if python3 -m pip --version >/dev/null 2>&1; then
  pip_target=(python3 -m pip install -q --no-deps --disable-pip-version-check --root-user-action=ignore --target)
elif command -v uv >/dev/null; then  # a uv-made environment has no pip
  pip_target=(uv pip install -q --no-deps --target)
else
  log "neither pip nor uv is available to fetch the nvidia-* wheels"; exit 1
fi
"${pip_target[@]}" "$work/pypi" "$PYPI_CUDA_RUNTIME" "$PYPI_CUDA_NVCC" "$PYPI_CUDA_CCCL" "$PYPI_CUBLAS" >&2

# Assemble a standard toolkit layout: bin/ include/ lib64/ nvvm/.
deb=$work/root
nv=$work/pypi/nvidia
mkdir -p "$prefix/bin/crt" "$prefix/include" "$prefix/lib64" "$prefix/nvvm/bin" "$prefix/nvvm/lib64" "$prefix/nvvm/libdevice"
cp "$deb/usr/lib/nvidia-cuda-toolkit/bin/nvcc" "$prefix/bin/nvcc"
for tool in cudafe++ fatbinary nvlink bin2c ptxas cuobjdump; do cp "$deb/usr/bin/$tool" "$prefix/bin/"; done
cp "$deb"/usr/lib/nvidia-cuda-toolkit/bin/crt/*.stub "$prefix/bin/crt/"
cp "$deb/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$prefix/nvvm/bin/"
cp "$deb"/usr/lib/*-linux-gnu/libnvvm.so.4* "$prefix/nvvm/lib64/"  # x86_64- or aarch64-linux-gnu
ln -sf libnvvm.so.4 "$prefix/nvvm/lib64/libnvvm.so"
cp "$deb/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" "$prefix/nvvm/libdevice/"
for part in cuda_runtime cuda_nvcc cuda_cccl cublas; do
  cp -r "$nv/$part/include/." "$prefix/include/"
done
rm -f "$prefix/include/__init__.py"; rm -rf "$prefix/include/__pycache__"
for lib in "$nv/cuda_runtime/lib/libcudart.so.12" "$nv/cublas/lib/libcublas.so.12" "$nv/cublas/lib/libcublasLt.so.12"; do
  name=$(basename "$lib")
  ln -sf "$lib" "$prefix/lib64/$name"
  ln -sf "$name" "$prefix/lib64/${name%.12}"
done
cat >"$prefix/bin/nvcc.profile" <<'PROFILE'
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:$(TOP)/nvvm/lib64:
PATH            += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE

check_nvcc "$prefix" || { log "assembled nvcc does not report release $CUDA_VERSION"; exit 1; }
rm -rf "$work/root"  # copied into the prefix (lib64 links into $work/pypi, which stays)
printf 'CUDA %s assembled from Debian %s and PyPI wheels\n' "$CUDA_VERSION" "$DEB_CUDA_TOOLKIT_VERSION" >"$prefix/.complete"
log "CUDA $CUDA_VERSION toolchain ready in $prefix"
host_compiler "$prefix"
