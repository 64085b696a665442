#!/usr/bin/env bash
# Starts N processes of a perf binary on this machine, the way a cluster
# launcher would: RANK, WORLD_SIZE and LOCAL_RANK per process and a shared
# HCL_COMM_ID (a free loopback port unless HCL_COMM_ID is already set).
# Process 0 prints the nccl-tests report. Exits with the first non-zero exit
# status, after stopping the other processes.
#
#   perf/launch_local.sh 4 build/perf/all_reduce_perf -b 8 -e 128M -f 2
set -uo pipefail

if [ $# -lt 2 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 NPROCS BINARY [ARGS...]" >&2
  exit 2
fi
nprocs=$1
shift

if [ -z "${HCL_COMM_ID:-}" ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  export HCL_COMM_ID="127.0.0.1:${port}"
fi

pids=()
for ((r = 0; r < nprocs; r++)); do
  RANK=$r WORLD_SIZE=$nprocs LOCAL_RANK=$r "$@" &
  pids+=($!)
done

status=0
while [ ${#pids[@]} -gt 0 ]; do
  done_pid=
  wait -n -p done_pid "${pids[@]}"
  rc=$?
  # Processes that ended together may have been reaped already, which leaves
  # `wait -n` nothing to report: take the saved status of one that is gone.
  if [ -z "$done_pid" ]; then
    for pid in "${pids[@]}"; do
      if ! kill -0 "$pid" 2>/dev/null; then
        done_pid=$pid
        wait "$pid"
        rc=$?
        break
      fi
    done
    if [ -z "$done_pid" ]; then
      sleep 0.05
      continue
    fi
  fi
  # Any signal but the SIGTERM this script sends the others after a failure.
  if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ] && { [ "$status" -eq 0 ] || [ "$rc" -ne 143 ]; }; then
    echo "launch_local.sh: process $done_pid ended by signal $((rc - 128))" >&2
  fi
  left=()
  for pid in "${pids[@]}"; do
    [ "$pid" != "$done_pid" ] && left+=("$pid")
  done
  pids=("${left[@]}")
  if [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$rc
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  fi
done
exit "$status"
