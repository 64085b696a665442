// The copy bound of tools/compare: what a 2-rank allreduce on malloc
// buffers cannot beat when one process may not map the other's memory. Two
// processes, and per call each one only moves data, reducing nothing:
// process_vm_readv of the peer's input half it would reduce, into its own
// output, then process_vm_writev of that half into the peer's output (the
// result the peer needs). That is every byte that has to cross between the
// processes, each copied once by the kernel.
// Reported as busbw (size / time), with the sizes, iteration counts and
// medians of the other peers (sweep.h).
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "sweep.h"

namespace {

// In memory both processes share: the barrier, and where each one's buffers are.
struct Shared {
  std::atomic<uint64_t> arrived[2];
  std::atomic<int64_t> pid[2];
  std::atomic<uint64_t> input[2], output[2];
  std::atomic<uint64_t> elems;  // of the current size, set by side 0
  std::atomic<int> iters;       // of the current size, set by side 0
  std::atomic<int> failed;
};

// Both sides arrive at round `round` (1, 2, ...) before either goes on.
void barrier(Shared& s, int side, uint64_t round) {
  s.arrived[side].store(round, std::memory_order_release);
  while (s.arrived[1 - side].load(std::memory_order_acquire) < round) {
  }
}

bool copyHalf(Shared& s, int side, float* output, size_t elems) {
  const int peer = 1 - side;
  const size_t half = elems / 2;
  const size_t begin = side == 0 ? 0 : half, len = side == 0 ? half : elems - half;
  const size_t bytes = len * sizeof(float);
  if (bytes == 0) return true;
  const pid_t peerPid = static_cast<pid_t>(s.pid[peer].load());
  iovec local{output + begin, bytes};
  iovec remote{reinterpret_cast<float*>(s.input[peer].load()) + begin, bytes};
  if (process_vm_readv(peerPid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(bytes)) return false;
  remote.iov_base = reinterpret_cast<float*>(s.output[peer].load()) + begin;
  return process_vm_writev(peerPid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
}

int runSide(Shared& s, int side, const sweep_options& o) {
  const size_t maxElems = o.maxBytes / sizeof(float) + 1;
  std::vector<float> input(maxElems, static_cast<float>(side + 1)), output(maxElems, 0.0f);
  std::vector<double> times(o.maxIters);
  s.input[side] = reinterpret_cast<uint64_t>(input.data());
  s.output[side] = reinterpret_cast<uint64_t>(output.data());
  s.pid[side] = getpid();
  uint64_t round = 0;
  barrier(s, side, ++round);
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
    const size_t elems = sweep_count(SWEEP_ALLREDUCE, bytes, 2);
    if (elems == 0) continue;
    const int planned = sweep_iters(&o, bytes), warm = sweep_warmup(planned);
    double perCall = sweep_now();
    for (int w = 0; w < warm; ++w) {
      barrier(s, side, ++round);
      if (!copyHalf(s, side, output.data(), elems)) s.failed = 1;
    }
    barrier(s, side, ++round);
    // Side 0 picks the count from its clock; side 1 takes it.
    if (side == 0) s.iters = sweep_iters_timed(&o, planned, (sweep_now() - perCall) / warm);
    barrier(s, side, ++round);
    const int iters = s.iters.load();
    // Each round starts and ends at a barrier of both sides already.
    const double loopStart = sweep_now();
    for (int i = 0; i < iters; ++i) {
      const double t0 = sweep_now();
      barrier(s, side, ++round);
      if (!copyHalf(s, side, output.data(), elems)) s.failed = 1;
      barrier(s, side, ++round);
      times[i] = sweep_now() - t0;
    }
    const double loopSeconds = sweep_now() - loopStart;
    // Half k of both outputs holds side (1-k)'s input, k + 1 -> 2 - k.
    long wrong = 0;
    for (size_t i = 0; i < elems; ++i) wrong += output[i] != (i < elems / 2 ? 2.0f : 1.0f);
    if (side == 0 && !s.failed) {
      const sweep_row row = sweep_make_row(SWEEP_ALLREDUCE, elems, 2, times.data(), iters, wrong, loopSeconds);
      sweep_print_row(&row);
      std::fflush(stdout);
    }
  }
  return s.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  sweep_options o;
  if (sweep_parse_args(argc, argv, &o) != 0) return 2;
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("copy_bound_bench: mmap");
    return 1;
  }
  Shared& s = *new (mem) Shared{};
  // Either process may read and write the other's memory (Yama allows only
  // ancestors by default).
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("copy_bound_bench: fork");
    return 1;
  }
  if (child == 0) _exit(runSide(s, 1, o));
  const int rc = runSide(s, 0, o);
  int status = 0;
  waitpid(child, &status, 0);
  if (s.failed) std::fprintf(stderr, "copy_bound_bench: process_vm_readv/writev failed (ptrace permission?)\n");
  return rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? 1 : 0;
}
