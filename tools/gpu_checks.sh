#!/usr/bin/env bash
# On a machine with a GPU, after a build: the GPU tests on both same-vendor
# paths (device IPC, and host-staged with HCL_IPC_DISABLE=1), then the
# staged-path and PyTorch benchmarks. Every log goes to one folder, for the
# tables in docs/devices.md and docs/performance.md.
#
#   bash tools/gpu_checks.sh [tests|staged|bench|memcheck|all] [OUT_DIR]
#
# tests: `ctest -L gpu` twice (IPC, then staged); staged: hcl_staged_bench
# at 64 and 256 MiB on 2 and 4 ranks; bench: that and
# tools/bench/torch_allreduce_bench.py where PyTorch is installed; memcheck:
# compute-sanitizer's memcheck over the kernels and the staged path (not the
# IPC path, whose kernels read memory mapped after their launch, which
# memcheck reports as out of bounds: devices.md); all (the default): tests
# and bench. The benchmarks are skipped, saying so, where
# neither nvidia-smi nor rocm-smi sees a GPU. HCL_BUILD_DIR names
# the build (default build); OUT_DIR defaults to $HCL_BUILD_DIR/gpu-checks.
# Exits 1 if a test failed or a benchmark did not finish, 0 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
build="${HCL_BUILD_DIR:-build}"
out="${2:-$build/gpu-checks}"
case "$what" in
  tests | staged | bench | memcheck | all) ;;
  *) echo "usage: $0 [tests|staged|bench|memcheck|all] [OUT_DIR]" >&2; exit 2 ;;
esac
if [[ ! -f "$build/CTestTestfile.cmake" ]]; then
  echo "gpu_checks: no build in '$build' (run tools/build.sh, or set HCL_BUILD_DIR)" >&2
  exit 2
fi
mkdir -p "$out"
failed=0

# Runs one step, logging to $out/NAME.log; a step that fails marks the run.
step() {  # step NAME COMMAND...
  local name="$1"
  shift
  echo "== $name: $*"
  if "$@" >"$out/$name.log" 2>&1; then
    echo "   ok ($out/$name.log)"
  else
    echo "   FAILED with exit $? ($out/$name.log)"
    tail -n 20 "$out/$name.log" | sed 's/^/   | /'
    failed=1
  fi
}

{
  date -u +"%Y-%m-%d %H:%M UTC"
  uname -srm
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max \
    --format=csv,noheader
  command -v rocm-smi >/dev/null && rocm-smi --showproductname
  git log -1 --format="HCL %h %s" 2>/dev/null
} >"$out/machine.txt" 2>&1
echo "machine: $(tr '\n' ';' <"$out/machine.txt")"

run_tests() {
  step ctest-ipc ctest --test-dir "$build" -L gpu --output-on-failure
  # The cases whose same-vendor pairs take the IPC path, again on the staged one.
  step ctest-staged env HCL_IPC_DISABLE=1 ctest --test-dir "$build" -L gpu -R "gpu_comm|gpu_stream|torch|train_loop" \
    --output-on-failure
}

# cuda or hip, whichever GPU the vendor's tool lists; nothing without one.
gpu_vendor() {
  if nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
    echo cuda
  elif rocm-smi --showproductname 2>/dev/null | grep -q "GPU\["; then
    echo hip
  fi
}

run_staged() {
  local vendor
  vendor=$(gpu_vendor)
  if [[ -z "$vendor" ]]; then
    echo "== staged: skipped (no GPU listed by nvidia-smi or rocm-smi)"
    return
  fi
  for ranks in 2 4; do
    for bytes in 67108864 268435456; do
      step "staged-$vendor-$ranks-ranks-$bytes" timeout 300 "$build/tools/hcl_staged_bench" "$bytes" 0 5 "$vendor" "$ranks"
    done
  done
}

run_torch() {
  if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "== torch: skipped (no PyTorch that sees a GPU)"
    return
  fi
  for ranks in 2 4; do
    step "torch-$ranks-ranks" timeout 300 env LD_PRELOAD="$build/libnccl.so.2" \
      python3 tools/bench/torch_allreduce_bench.py "$ranks"
  done
}

run_memcheck() {
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ ! -x "$sanitizer" || "$(gpu_vendor)" != cuda ]]; then
    echo "== memcheck: skipped (needs compute-sanitizer and an NVIDIA GPU)"
    return
  fi
  local check=("$sanitizer" --tool memcheck --target-processes all --error-exitcode 9)
  step memcheck-device timeout 600 "${check[@]}" "$build/tests/gpu/gpu_device_test_cuda"
  step memcheck-staged timeout 600 "${check[@]}" "$build/tests/gpu/gpu_comm_test" \
    "--gtest_filter=*Staged*/cuda:*Mix*/cuda:*Reports*/cuda"
}

case "$what" in
  tests) run_tests ;;
  memcheck) run_memcheck ;;
  staged) run_staged ;;
  bench) run_staged; run_torch ;;
  all) run_tests; run_staged; run_torch ;;
esac
echo "logs in $out"
exit "$failed"
