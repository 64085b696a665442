// What handing cache lines between two processes costs on this machine, the
// way the window all-reduce does it: one process stores into a shared
// buffer, the other copies it out, by turns. Prints the round trip of one
// line between the two CPUs, and per 512 KiB hand-off the writer's and the
// reader's time when the writer stores into the buffer the reader read just
// before, into one it read several hand-offs ago, and with stores that
// bypass the cache.
//
//   hcl_line_handoff_bench [CPU_A CPU_B]      (default 0 1)
//
// A store into a line another core holds waits for that copy's
// invalidation; how long depends on where the two CPUs sit (one core
// complex or two, or wherever a virtual machine's host has put them).
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBytes = 512 * 1024;
constexpr int kRounds = 1000;

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("sched_setaffinity");
}

double microseconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void streamCopy(char* dst, const char* src, size_t bytes) {
#if defined(__x86_64__)
  for (size_t i = 0; i < bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

// Shared between the two processes: a turn word on its own line, the
// reader's result, and the buffers.
struct Shared {
  alignas(64) std::atomic<uint64_t> turn;
  alignas(64) double readerMicros;
  alignas(64) std::atomic<uint64_t> ping;
};

Shared* mapShared(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  return static_cast<Shared*>(p);
}

// Runs `child` in a process pinned to cpuB while the caller, pinned to
// cpuA, runs `parent`.
template <typename Parent, typename Child>
void inTwoProcesses(int cpuA, int cpuB, Parent parent, Child child) {
  const pid_t pid = fork();
  if (pid == 0) {
    pinTo(cpuB);
    child();
    _exit(0);
  }
  pinTo(cpuA);
  parent();
  waitpid(pid, nullptr, 0);
}

double roundTripNanos(Shared* s, int cpuA, int cpuB) {
  constexpr uint64_t kTrips = 200000;
  double nanos = 0;
  s->ping.store(0);
  inTwoProcesses(
      cpuA, cpuB,
      [&] {
        const auto t0 = Clock::now();
        for (uint64_t i = 0; i < kTrips; ++i) {
          s->ping.store(2 * i + 1, std::memory_order_release);
          while (s->ping.load(std::memory_order_acquire) != 2 * i + 2) {
          }
        }
        nanos = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kTrips;
      },
      [&] {
        for (uint64_t i = 0; i < kTrips; ++i) {
          while (s->ping.load(std::memory_order_acquire) != 2 * i + 1) {
          }
          s->ping.store(2 * i + 2, std::memory_order_release);
        }
      });
  return nanos;
}

struct Handoff {
  double writerMicros, readerMicros;
};

// Writer copies kBytes into buffer (round % turns), reader copies it out.
Handoff handoff(Shared* s, char* buffers, int turns, bool stream, int cpuA, int cpuB) {
  std::vector<char> source(kBytes, 1);
  double writer = 0;
  s->turn.store(0);
  inTwoProcesses(
      cpuA, cpuB,
      [&] {
        std::vector<double> t;
        for (int r = 0; r < kRounds; ++r) {
          while (s->turn.load(std::memory_order_acquire) != 2 * static_cast<uint64_t>(r)) {
          }
          char* into = buffers + static_cast<size_t>(r % turns) * kBytes;
          const auto t0 = Clock::now();
          if (stream) {
            streamCopy(into, source.data(), kBytes);
          } else {
            std::memcpy(into, source.data(), kBytes);
          }
          t.push_back(microseconds(t0, Clock::now()));
          s->turn.store(2 * static_cast<uint64_t>(r) + 1, std::memory_order_release);
        }
        writer = median(t);
      },
      [&] {
        std::vector<char> out(kBytes);
        std::vector<double> t;
        for (int r = 0; r < kRounds; ++r) {
          while (s->turn.load(std::memory_order_acquire) != 2 * static_cast<uint64_t>(r) + 1) {
          }
          const char* from = buffers + static_cast<size_t>(r % turns) * kBytes;
          const auto t0 = Clock::now();
          std::memcpy(out.data(), from, kBytes);
          t.push_back(microseconds(t0, Clock::now()));
          s->turn.store(2 * static_cast<uint64_t>(r) + 2, std::memory_order_release);
        }
        s->readerMicros = median(t);
      });
  // The parent returns after waitpid, so the child's result is there.
  return {writer, s->readerMicros};
}

}  // namespace

int main(int argc, char** argv) {
  const int cpuA = argc > 2 ? std::atoi(argv[1]) : 0;
  const int cpuB = argc > 2 ? std::atoi(argv[2]) : 1;
  constexpr int kMaxTurns = 8;
  const size_t bytes = 4096 + kMaxTurns * kBytes;
  Shared* s = mapShared(bytes);
  char* buffers = reinterpret_cast<char*>(s) + 4096;
  std::printf("CPUs %d and %d\n", cpuA, cpuB);
  std::printf("cache-line round trip: %.0f ns\n", roundTripNanos(s, cpuA, cpuB));
  std::printf("%-40s %12s %12s\n", "512 KiB hand-off", "writer (us)", "reader (us)");
  struct Case {
    const char* name;
    int turns;
    bool stream;
  };
  for (const Case c : {Case{"into the buffer just read", 1, false}, Case{"into one read 4 hand-offs ago", 4, false},
                       Case{"past the cache (non-temporal stores)", 1, true}}) {
    const Handoff h = handoff(s, buffers, c.turns, c.stream, cpuA, cpuB);
    std::printf("%-40s %12.1f %12.1f\n", c.name, h.writerMicros, h.readerMicros);
  }
  munmap(s, bytes);
  return 0;
}
