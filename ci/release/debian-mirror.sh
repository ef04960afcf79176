#!/usr/bin/env bash
# Print this machine's Debian mirror, read from its own APT sources (deb822 or one-line format);
# $DEBIAN_MIRROR overrides. The project never names a mirror itself.
set -euo pipefail
if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; exit 0; fi
mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' \
    | grep -v security | grep -i debian | head -n1 || true)
fi
[ -n "$mirror" ] || { echo "no Debian mirror found in /etc/apt; set DEBIAN_MIRROR" >&2; exit 1; }
echo "$mirror"
