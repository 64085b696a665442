#!/usr/bin/env bash
# small_dev_shm.sh LAUNCH_LOCAL ALL_REDUCE_PERF
# Four ranks on one host with an 8 MiB /dev/shm (a container's default is
# 64 MiB) in a mount namespace of their own. Shared-memory slots are taken
# as lanes come into use, so small allreduces run where reserving every
# pair's whole segment at init (6 pairs of 6.3 MiB) could not; large ones
# run out of room and must fail on an error naming /dev/shm, not a SIGBUS.
# Needs root for the namespace; skipped (77) without it.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: small_dev_shm.sh LAUNCH_LOCAL ALL_REDUCE_PERF" >&2
  exit 2
fi
launch=$1
perf=$2
if ! unshare -m --propagation private true 2>/dev/null; then
  echo "skipped: no mount namespace (needs root)"
  exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() {
  unshare -m --propagation private bash -c 'mount -t tmpfs -o size=8m tmpfs /dev/shm && exec "$@"' _ \
    env HCL_TIMEOUT_MS=30000 timeout 120 "$launch" 4 "$perf" "$@" >"$log" 2>&1
}

fail() {
  echo "small_dev_shm: $*"
  exit 1
}

run -b 8 -e 16 -f 2 -n 5 -w 1 -c 1
rc=$?
cat "$log"
[[ $rc -eq 0 ]] || fail "16-byte allreduces failed (exit $rc) in an 8 MiB /dev/shm"
grep -q "Out of bounds values : 0 OK" "$log" || fail "no correctness summary, or wrong values"

run -b 8 -e 1M -f 4 -n 2 -w 1
rc=$?
cat "$log"
[[ $rc -ne 0 ]] || fail "1 MiB allreduces passed in an 8 MiB /dev/shm; they should not fit"
[[ $rc -lt 124 ]] || fail "the job ended by a signal or the timeout (exit $rc), not an error"
grep -q "no room in /dev/shm for the .* lane's slots" "$log" || fail "no error naming /dev/shm"
# The launcher stops the others after the first failure; a rank that died
# by a signal before that is still reported.
! grep -q "ended by signal" "$log" || fail "a rank died by a signal"
echo "small_dev_shm: passed"
