#!/usr/bin/env bash
# plan_across_hosts.sh LAUNCH_LOCAL ALL_REDUCE_PERF
# 40 ranks on 5 emulated hosts of 8 (HCL_HOSTID), above the 32 ranks every
# communicator is priced up to: across hosts rank 0 still prices a plan
# table, so large allreduces run the hierarchical algorithm rather than the
# size rules' ring, and give correct sums.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: plan_across_hosts.sh LAUNCH_LOCAL ALL_REDUCE_PERF" >&2
  exit 2
fi
launch=$1
perf=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() {
  echo "plan_across_hosts: $*"
  exit 1
}
# The model's own link costs: no probe, no link-model file from outside.
unset HCL_PROBE HCL_LINK_MODEL
HCL_DEBUG=INFO HCL_DEBUG_SUBSYS=TUNING HCL_TIMEOUT_MS=60000 timeout 240 "$launch" 40 \
  bash -c 'HCL_HOSTID=h$((RANK / 8)) exec "$@"' _ "$perf" -b 8 -e 8M -f 16 -n 2 -w 1 -c 1 -H 1 >"$log" 2>&1
rc=$?
cat "$log"
[[ $rc -eq 0 ]] || fail "the job failed (exit $rc)"
grep -q "Out of bounds values : 0 OK" "$log" || fail "no correctness summary, or wrong values"
grep -q "\[0\] HCL INFO TUNING plan (40 ranks):" "$log" || fail "rank 0 priced no plan table for 40 ranks"
grep -Eq "^ +8388608 .* hier +shm,tcp" "$log" || fail "the 8 MiB allreduce did not run hier"
echo "plan_across_hosts: passed"
