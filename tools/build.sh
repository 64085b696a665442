#!/usr/bin/env bash
# Configures and builds HCL into ${HCL_BUILD_DIR:-build}. Extra arguments, and
# the words of $HCL_CMAKE_ARGS, go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
build_dir="${HCL_BUILD_DIR:-build}"
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${HCL_BUILD_TYPE:-RelWithDebInfo}" ${HCL_CMAKE_ARGS:-} "$@"
cmake --build "$build_dir" -j"$(nproc)"
