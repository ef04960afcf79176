#!/usr/bin/env bash
# The tests, as CI runs them (.ci/run): every nox session tagged `ci`, in two lanes at once.
#
# release_aarch64, the longest session, emulates aarch64 (qemu user mode), mostly on one core; the
# other sessions run one after another beside it, so the whole takes about the longer lane's time,
# not the sum (the line this prints at the end gives it).
# The lanes write nothing in common: release_aarch64 builds from a clone inside its own root
# filesystem into dist/release-aarch64, while the other sessions build the checkout in place (so
# they share one lane). `ci/nox.sh -t ci` runs the same sessions in a row.
# Extra arguments go to both nox runs (e.g. --reuse-venv=yes).
set -euo pipefail
cd "$(dirname "$0")/.."
beside=release_aarch64

# First use creates the tools environment and CPython 3.14: once, before two runs share them.
ci/nox.sh --list >/dev/null

logs=$(mktemp -d "${TMPDIR:-/tmp}/pytinytensor-tests.XXXXXX")
beside_log=$logs/$beside.log
started=$SECONDS
ci/nox.sh -s "$beside" "$@" >"$beside_log" 2>&1 &
beside_pid=$!
trap 'kill "$beside_pid" 2>/dev/null || true' EXIT
echo "ci/tests.sh: $beside runs beside the other sessions; its log: $beside_log"

main_rc=0
ci/nox.sh -t ci -k "not $beside" "$@" || main_rc=$?
main_s=$((SECONDS - started))
beside_rc=0
wait "$beside_pid" || beside_rc=$?
trap - EXIT

echo
echo "ci/tests.sh: ===== $beside (ran beside the sessions above) ====="
cat "$beside_log"
echo
echo "ci/tests.sh: the other sessions: exit $main_rc after ${main_s} s; $beside: exit $beside_rc; all: $((SECONDS - started)) s"
[ "$main_rc" -eq 0 ] && [ "$beside_rc" -eq 0 ]
