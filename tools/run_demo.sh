#!/usr/bin/env bash
# Builds HCL and runs its main job: a 4-rank allreduce demo (processes on
# this machine) that prints the ranks, the transport of each link, the
# result check and the time. Extra arguments go to the demo (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh >/dev/null
"${HCL_BUILD_DIR:-build}/examples/allreduce_demo" --ranks 4 "$@"
