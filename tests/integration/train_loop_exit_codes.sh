#!/usr/bin/env bash
# The training loop's exit codes: 2 for bad options, 77 when a requested
# device is missing (agreed by every rank, forked or launched one by one),
# 1 when a rank dies (the others are stopped instead of left waiting).
set -uo pipefail
loop="$1"
failures=0

expect() {  # expect CODE DESCRIPTION -- COMMAND...
  local want="$1" what="$2"
  shift 3
  local log
  log=$(mktemp)
  "$@" >"$log" 2>&1
  local got=$?
  if [[ "$got" != "$want" ]]; then
    echo "FAIL: $what: exit $got, expected $want"
    sed 's/^/    /' "$log"
    failures=$((failures + 1))
  else
    echo "ok: $what (exit $got)"
  fi
  rm -f "$log"
}

expect 2 "trailing text in a number" -- "$loop" --ranks 2x
expect 2 "too many ranks" -- "$loop" --ranks 100000
expect 2 "misspelled device" -- "$loop" --devices cpu,cdua
expect 2 "too few steps to judge" -- "$loop" --steps 1
expect 2 "learning rate that is not a number" -- "$loop" --lr fast
expect 2 "stray argument" -- "$loop" extra
expect 2 "--kill-step without --kill-rank" -- "$loop" --kill-step 5
expect 2 "--kill-rank beyond the ranks" -- "$loop" --ranks 2 --kill-rank 2
expect 2 "--kill-step after the last step" -- "$loop" --ranks 2 --kill-rank 1 --steps 30 --kill-step 30
expect 2 "RANK without WORLD_SIZE" -- env RANK=0 "$loop"
expect 2 "RANK that is not a number" -- env RANK=zero WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop"
expect 2 "RANK beyond WORLD_SIZE" -- env RANK=2 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop"
expect 77 "forked ranks, one device missing" -- "$loop" --ranks 3 --devices cpu,cuda:99 --steps 20

# Launcher mode: two processes meet through HCL_COMM_ID; rank 1's device is
# missing, so both must skip.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out0=$(mktemp) out1=$(mktemp)
RANK=0 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:$port "$loop" --devices cpu --steps 20 >"$out0" 2>&1 &
p0=$!
RANK=1 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:$port "$loop" --devices cuda:99 --steps 20 >"$out1" 2>&1 &
p1=$!
wait $p0; c0=$?
wait $p1; c1=$?
if [[ $c0 == 77 && $c1 == 77 ]]; then
  echo "ok: launched ranks, one device missing (exit 77 77)"
else
  echo "FAIL: launched ranks, one device missing: exit $c0 $c1, expected 77 77"
  sed 's/^/    rank 0: /' "$out0"; sed 's/^/    rank 1: /' "$out1"
  failures=$((failures + 1))
fi
rm -f "$out0" "$out1"

# A rank killed mid-run: the job ends with 1 although the survivors would
# wait a long HCL_TIMEOUT_MS for it.
HCL_TIMEOUT_MS=3600000 "$loop" --ranks 3 --steps 10000000 >/dev/null 2>&1 &
job=$!
# Whatever happens below, nothing of this job outlives the test.
trap 'pkill -KILL -P "$job" 2>/dev/null; kill -KILL "$job" 2>/dev/null' EXIT
victim=""
for _ in $(seq 1 600); do
  victim=$(pgrep -P "$job" | sed -n 2p)
  [[ -n "$victim" ]] && break
  sleep 0.1
done
sleep 1
if [[ -z "$victim" ]]; then
  echo "FAIL: the job's ranks never started"
  kill -9 "$job" 2>/dev/null
  failures=$((failures + 1))
else
  kill -9 "$victim"
  wait "$job"
  code=$?
  if [[ $code == 1 ]]; then
    echo "ok: a killed rank ends the job (exit 1)"
  else
    echo "FAIL: a killed rank: exit $code, expected 1"
    failures=$((failures + 1))
  fi
fi

exit $((failures > 0))
