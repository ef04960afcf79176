#!/usr/bin/env bash
# GCC 14 for the build stand-in's GCC 14 lane: the release image's default compiler is
# gcc-toolset-14 (pypa/manylinux#1730), which compiles the binding and links what nvcc compiled
# with its GCC 13 host compiler; this lane does the same in the Debian bookworm stand-in, without zig.
#
# Debian trixie's GCC 14 and binutils need glibc 2.38, and bookworm has 2.36, so they run on trixie's
# own C library, kept apart under PREFIX/runtime (their ELF interpreter and RPATH are set to it); what
# they compile and link uses the image's headers, glibc and libstdc++.so.6, as gcc-toolset-14 links
# the system's libstdc++.so.6. Nothing is installed into /: APT's state is private (as
# ci/release/install-cuda12.sh fetches nvcc), the packages are unpacked with dpkg -x.
#
# Usage: ci/dev/gcc14-toolchain.sh [PREFIX]  (default /opt/gcc-14, where the toolchain is to run)
# Prints the path of a .tar.gz holding PREFIX, made once and reused from the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=${1:-/opt/gcc-14}
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
work=$cache/gcc14-parts
archive=$cache/gcc14-toolchain-$(printf %s "$prefix" | tr / _).tar.gz
log() { echo "gcc14-toolchain: $*" >&2; }
if [ -f "$archive" ]; then log "reusing $archive"; echo "$archive"; exit 0; fi
command -v patchelf >/dev/null || { log "patchelf is needed on PATH (the release tools have it)"; exit 1; }

toolchain=(gcc-14 g++-14 cpp-14 gcc-14-x86-64-linux-gnu g++-14-x86-64-linux-gnu cpp-14-x86-64-linux-gnu gcc-14-base
  libstdc++-14-dev libgcc-14-dev libisl23 libmpc3 libmpfr6
  binutils-x86-64-linux-gnu libbinutils libctf0 libctf-nobfd0 libsframe1 libjansson4)
runtime=(libc6 libstdc++6 libgcc-s1 libgmp10 libzstd1 zlib1g)  # what the tools themselves run on

rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/debs/tools" "$work/debs/runtime"
echo "deb $("$here/../release/debian-mirror.sh") trixie main" >"$work/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache::Archives=$work/apt/archives"
  -o APT::Sandbox::User=root -o Debug::NoLocking=1)
log "fetching GCC 14 and binutils from Debian trixie"
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$work/debs/tools" && apt-get "${apt_opts[@]}" -qq download "${toolchain[@]}" >&2)
(cd "$work/debs/runtime" && apt-get "${apt_opts[@]}" -qq download "${runtime[@]}" >&2)

root=$work/root$prefix
mkdir -p "$root/runtime"
for deb in "$work"/debs/tools/*.deb; do dpkg -x "$deb" "$root"; done
for deb in "$work"/debs/runtime/*.deb; do dpkg -x "$deb" "$root/runtime"; done
lib=x86_64-linux-gnu
gcc_libexec=$root/usr/libexec/gcc/$lib/14
# every program of the toolchain runs on trixie's C library (DT_RPATH, unlike RUNPATH, also serves
# the libraries they load, such as binutils' libbfd)
for program in "$root"/usr/bin/$lib-* "$gcc_libexec"/*; do
  [ -f "$program" ] && [ ! -L "$program" ] && head -c 4 "$program" | grep -q ELF || continue
  patchelf --print-interpreter "$program" >/dev/null 2>&1 || continue  # plugins: loaded, not run
  patchelf --set-interpreter "$prefix/runtime/usr/lib/$lib/ld-linux-x86-64.so.2" --remove-rpath "$program"
  patchelf --force-rpath --set-rpath "$prefix/runtime/usr/lib/$lib:$prefix/usr/lib/$lib" "$program"
done
# GCC looks for as and ld beside its own programs first: trixie's, which can load its LTO plugin
ln -sf "../../../../bin/$lib-as" "$gcc_libexec/as"
ln -sf "../../../../bin/$lib-ld.bfd" "$gcc_libexec/ld"
# link against the image's libstdc++.so.6, as gcc-toolset-14 links the system's (older) one
ln -sfn "/usr/lib/$lib/libstdc++.so.6" "$root/usr/lib/gcc/$lib/14/libstdc++.so"
mkdir -p "$root/bin"
for tool in gcc g++ cpp; do ln -sf "../usr/bin/$lib-$tool-14" "$root/bin/$tool"; done
ln -sf gcc "$root/bin/cc"
ln -sf g++ "$root/bin/c++"
tar -czf "$archive.partial" -C "$work/root" "${prefix#/}"
mv "$archive.partial" "$archive"
rm -rf "$work"
log "GCC 14 toolchain for $prefix: $archive"
echo "$archive"
