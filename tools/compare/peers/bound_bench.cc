// The memory-bandwidth bound of tools/compare: two threads of one process
// compute c = a + b over float arrays, each thread its own half, with no
// copies -- the reduce a perfect 2-rank allreduce would have to do.
// Reported as the busbw such an allreduce would reach: for 2 ranks the
// factor 2(n-1)/n is 1, so busbw = size / time.
// Same sizes, iteration counts and medians as the other peers (sweep.h).
#include <barrier>
#include <cstdio>
#include <thread>
#include <vector>

#include "sweep.h"

namespace {

constexpr int kThreads = 2;

void addHalf(const float* a, const float* b, float* c, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
}

}  // namespace

int main(int argc, char** argv) {
  sweep_options o;
  if (sweep_parse_args(argc, argv, &o) != 0) return 2;
  const size_t elems = o.maxBytes / sizeof(float) + 1;
  std::vector<float> a(elems, 1.0f), b(elems, 2.0f), c(elems, 0.0f);
  std::vector<double> times(o.maxIters);

  // Per size: both threads start together, each reduces its half, the main
  // thread's clock runs from the start barrier to the end barrier.
  size_t count = 0;
  bool stop = false;
  std::barrier sync(kThreads);
  std::jthread helper([&] {
    for (;;) {
      sync.arrive_and_wait();  // start, or stop
      if (stop) return;
      addHalf(a.data(), b.data(), c.data(), count / 2, count);
      sync.arrive_and_wait();  // done
    }
  });
  auto round = [&] {
    sync.arrive_and_wait();
    addHalf(a.data(), b.data(), c.data(), 0, count / 2);
    sync.arrive_and_wait();
  };
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= 2) {
    count = sweep_count(SWEEP_ALLREDUCE, bytes, kThreads);
    if (count == 0) continue;
    const int planned = sweep_iters(&o, bytes), warm = sweep_warmup(planned);
    double perCall = sweep_now();
    for (int w = 0; w < warm; ++w) round();
    perCall = (sweep_now() - perCall) / warm;
    const int iters = sweep_iters_timed(&o, planned, perCall);
    // Each round starts and ends at a barrier of both threads already.
    const double loopStart = sweep_now();
    for (int i = 0; i < iters; ++i) {
      const double t0 = sweep_now();
      round();
      times[i] = sweep_now() - t0;
    }
    const double loopSeconds = sweep_now() - loopStart;
    long wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += c[i] != 3.0f;
    const sweep_row row = sweep_make_row(SWEEP_ALLREDUCE, count, kThreads, times.data(), iters, wrong, loopSeconds);
    sweep_print_row(&row);
  }
  stop = true;
  sync.arrive_and_wait();
  return 0;
}
