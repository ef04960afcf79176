#!/usr/bin/env bash
# An aarch64 Debian bookworm root filesystem that runs on an x86_64 machine under qemu user-mode
# emulation, for the aarch64 release rehearsal (python -m ci.dev.rehearsal.aarch64): CPython 3.11,
# g++ (nvcc's host compiler there, as install-cuda12.sh picks it) and what pip and the toolchain
# install need. Built once into the cache and reused; a partial one is never reused.
#
# Emulation: binfmt_misc is mounted if it is not, Debian's qemu-user-static installed, and
# qemu-aarch64 registered with the F flag (the interpreter is opened at registration, so it need
# not exist inside the chroot). Debian's package registers nothing without binfmt-support or
# systemd, so the line its systemd-binfmt file holds is written to the register file here. Root only.
#
# Usage: ci/dev/aarch64-rootfs.sh [ROOTFS]   (prints the root filesystem's path)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
root=${1:-$cache/aarch64-rootfs-bookworm-1}
log() { echo "aarch64-rootfs: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (binfmt_misc, debootstrap, chroot)"; exit 1; }

bm=/proc/sys/fs/binfmt_misc
[ -e "$bm/register" ] || mount -t binfmt_misc binfmt_misc "$bm"
if [ ! -x /usr/bin/qemu-aarch64-static ] || ! command -v debootstrap >/dev/null; then
  log "installing qemu-user-static and debootstrap (Debian)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static debootstrap >/dev/null
fi
if [ ! -e "$bm/qemu-aarch64" ]; then
  line=$(grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf | head -n1)
  case "$line" in *:*F*) ;; *) line="${line}F" ;; esac
  printf '%s' "$line" >"$bm/register"
fi
grep -q '^enabled' "$bm/qemu-aarch64" && grep -q '^flags: .*F' "$bm/qemu-aarch64" \
  || { log "qemu-aarch64 is registered but not enabled with the F flag: $(cat "$bm/qemu-aarch64")"; exit 1; }

if [ ! -f "$root/.complete" ]; then
  mirror=$("$here/../release/debian-mirror.sh")
  rm -rf "$root" "$root.partial"
  mkdir -p "$root.partial"
  log "debootstrap arm64 bookworm from $mirror (the second stage runs emulated: minutes)"
  debootstrap --arch=arm64 --foreign --variant=minbase \
    --include=python3,python3-venv,python3-pip,python3-dev,g++,ca-certificates,binutils,file,xz-utils \
    bookworm "$root.partial" "$mirror" >&2
  chroot "$root.partial" /debootstrap/debootstrap --second-stage >&2
  rm -f "$root.partial"/usr/lib/python3*/EXTERNALLY-MANAGED "$root.partial"/var/cache/apt/archives/*.deb
  touch "$root.partial/.complete"
  mv "$root.partial" "$root"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine's CA bundle (it may trust a TLS-inspecting proxy that Debian's does not).
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
echo "$root"
