#!/usr/bin/env bash
# Builds HCL and runs its test suite. Pass ctest arguments to narrow it,
# e.g. `bash tools/run_tests.sh -L unit` or `-LE slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
build_dir="${HCL_BUILD_DIR:-build}"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" "$@"
