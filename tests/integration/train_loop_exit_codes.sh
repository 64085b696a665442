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
expect 2 "negative grace" -- "$loop" --grace -1
expect 2 "grace that is not a number" -- "$loop" --grace soon
expect 2 "stray argument" -- "$loop" extra
expect 2 "--kill-step without --kill-rank" -- "$loop" --kill-step 5
expect 2 "--kill-rank beyond the ranks" -- "$loop" --ranks 2 --kill-rank 2
expect 2 "--kill-step after the last step" -- "$loop" --ranks 2 --kill-rank 1 --steps 30 --kill-step 30
expect 2 "--host-env without a colon" -- "$loop" --host-env HCL_IB=off
expect 2 "--host-env without a name" -- "$loop" --host-env 1:=off
expect 2 "--host-env beyond the hosts" -- "$loop" --ranks 4 --hosts 2 --host-env 2:HCL_IB=off
expect 2 "--host-env with real hosts" -- "$loop" --hosts 0 --host-env 0:HCL_IB=off
expect 2 "launched: --host-env" -- env RANK=0 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop" --host-env 0:HCL_IB=off
expect 2 "RANK without WORLD_SIZE" -- env RANK=0 "$loop"
expect 2 "RANK that is not a number" -- env RANK=zero WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop"
expect 2 "RANK beyond WORLD_SIZE" -- env RANK=2 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop"
expect 2 "launched: --kill-rank beyond WORLD_SIZE" -- env RANK=0 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop" --kill-rank 3
expect 2 "launched: --ranks other than WORLD_SIZE" -- env RANK=0 WORLD_SIZE=2 HCL_COMM_ID=127.0.0.1:1 "$loop" --ranks 3
# --kill-rank is judged against WORLD_SIZE, not --ranks' default of 4: this
# rank 0 waits for its 7 peers and gives up (1), rather than refusing (2).
expect 1 "launched: --kill-rank within WORLD_SIZE" -- env HCL_TIMEOUT_MS=300 RANK=0 WORLD_SIZE=8 \
  HCL_COMM_ID=127.0.0.1:1 "$loop" --kill-rank 5 --steps 20
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

# Process ids of the job's forked ranks, once `want` of them have started.
rank_pids() {  # rank_pids JOB WANT
  local pids
  for _ in $(seq 1 600); do
    pids=$(pgrep -P "$1" | sort -n)
    [[ $(wc -w <<<"$pids") -ge $2 ]] && { echo $pids; return; }
    sleep 0.1
  done
}

# A rank killed mid-run: the job ends with 1 although the survivors would
# wait a long HCL_TIMEOUT_MS for it.
HCL_TIMEOUT_MS=3600000 "$loop" --ranks 3 --steps 10000000 >/dev/null 2>&1 &
job=$!
# Whatever happens below, nothing of this job outlives the test.
trap 'pkill -KILL -P "$job" 2>/dev/null; kill -KILL "$job" 2>/dev/null' EXIT
read -r -a ranks <<<"$(rank_pids "$job" 3)"
victim="${ranks[1]:-}"
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

# A rank killed while another is stopped (SIGSTOP: alive, but it will never
# report): after --grace the job kills what is still running and ends with 1.
log=$(mktemp)
HCL_TIMEOUT_MS=3600000 "$loop" --ranks 3 --steps 10000000 --grace 1 >/dev/null 2>"$log" &
job=$!
trap 'pkill -KILL -P "$job" 2>/dev/null; kill -KILL "$job" 2>/dev/null' EXIT
read -r -a ranks <<<"$(rank_pids "$job" 3)"
if [[ ${#ranks[@]} -lt 3 ]]; then
  echo "FAIL: the stalled-rank job's ranks never started"
  failures=$((failures + 1))
else
  sleep 1
  kill -STOP "${ranks[2]}"
  kill -KILL "${ranks[1]}"
  # A hang guard, not a timing check: the grace is 1 s, the guard 60.
  for _ in $(seq 1 600); do
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$job" 2>/dev/null; then
    echo "FAIL: a stalled rank: the job was still running 60 s after a rank died"
    failures=$((failures + 1))
  else
    wait "$job"
    code=$?
    if [[ $code == 1 ]] && grep -q "stopping the [12] rank(s) still running" "$log" && ! kill -0 "${ranks[2]}" 2>/dev/null; then
      echo "ok: a stalled rank is killed after --grace (exit 1)"
    else
      echo "FAIL: a stalled rank: exit $code (expected 1), or no 'stopping' message, or the stopped rank survived"
      sed 's/^/    /' "$log"
      failures=$((failures + 1))
    fi
  fi
fi
rm -f "$log"

exit $((failures > 0))
