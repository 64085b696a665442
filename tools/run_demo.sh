#!/usr/bin/env bash
# Builds HCL and runs its main job: an nccl-tests-style all_reduce_perf sweep
# over 4 ranks (processes on this machine). It prints the nccl-tests table
# and writes the JSON and a plot of busbw and time next to it. Extra
# arguments go to all_reduce_perf (see --help), e.g. -e 256M or -d all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh >/dev/null
build_dir="${HCL_BUILD_DIR:-build}"
out_dir="$build_dir/main-job"
mkdir -p "$out_dir"
rm -f "$out_dir"/allreduce.json*
perf/launch_local.sh 4 "$build_dir/perf/all_reduce_perf" -b 8 -e 32M -f 4 -n 10 -w 3 \
  -J "$out_dir/allreduce.json" "$@"
echo "# JSON: $out_dir/allreduce.json"
python3 tools/plot/plot.py "$out_dir/allreduce.png" "$out_dir/allreduce.json" \
  --labels "HCL all_reduce_perf (4 ranks)" --title "HCL allreduce, 4 local ranks"
echo "# Plot: $out_dir/allreduce.png"
