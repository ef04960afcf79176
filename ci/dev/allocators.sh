#!/usr/bin/env bash
# The allocators serving machines preload (LD_PRELOAD), for the release rehearsal's runs of the
# installed wheel under each: Debian's libjemalloc2 and libtcmalloc-minimal4, fetched with a
# private APT configuration from this machine's own suite and unpacked into the cache (nothing is
# installed into /), unless the system already has them. Prints `jemalloc=PATH` and `tcmalloc=PATH`.
#
# Usage: ci/dev/allocators.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${PYTINYTENSOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pytinytensor}
work=$cache/allocators
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
declare -A packages=([jemalloc]=libjemalloc2 [tcmalloc]=libtcmalloc-minimal4)
declare -A files=([jemalloc]=libjemalloc.so.2 [tcmalloc]=libtcmalloc_minimal.so.4)
log() { echo "allocators: $*" >&2; }

fetched=0
for name in jemalloc tcmalloc; do
  for dir in "/usr/lib/$multiarch" "$work/root/usr/lib/$multiarch"; do
    if [ -f "$dir/${files[$name]}" ]; then echo "$name=$dir/${files[$name]}"; continue 2; fi
  done
  if [ "$fetched" = 0 ]; then
    . /etc/os-release
    mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/debs"
    echo "deb $("$here/../release/debian-mirror.sh") ${VERSION_CODENAME:?} main" >"$work/apt/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache::Archives=$work/apt/archives"
      -o APT::Sandbox::User=root -o Debug::NoLocking=1)
    apt-get "${apt_opts[@]}" -qq update >&2
    fetched=1
  fi
  log "fetching ${packages[$name]}"
  (cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "${packages[$name]}" >&2)
  dpkg -x "$(ls "$work"/debs/"${packages[$name]}"_*.deb | head -n1)" "$work/root"
  path=$work/root/usr/lib/$multiarch/${files[$name]}
  [ -f "$path" ] || { log "${packages[$name]} holds no ${files[$name]}"; exit 1; }
  echo "$name=$path"
done
