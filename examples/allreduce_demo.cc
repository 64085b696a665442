// HCL's demo job: N ranks (processes on this machine) run a float allreduce
// and report the ranks, the transport each pair uses, the result check and
// the time.
//
//   allreduce_demo [--ranks N] [--count ELEMENTS] [--iters K] [--tcp]
#include <getopt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hcl.h"

namespace {

struct Options {
  int ranks = 4;
  size_t count = 4 << 20;
  int iters = 5;
  bool tcp = false;
};

Options parse(int argc, char** argv) {
  Options o;
  const option longOpts[] = {{"ranks", required_argument, nullptr, 'n'},
                             {"count", required_argument, nullptr, 'c'},
                             {"iters", required_argument, nullptr, 'i'},
                             {"tcp", no_argument, nullptr, 't'},
                             {"help", no_argument, nullptr, 'h'},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "n:c:i:th", longOpts, nullptr)) != -1) {
    switch (c) {
      case 'n': o.ranks = std::atoi(optarg); break;
      case 'c': o.count = std::strtoull(optarg, nullptr, 10); break;
      case 'i': o.iters = std::atoi(optarg); break;
      case 't': o.tcp = true; break;
      default:
        std::printf("usage: %s [--ranks N] [--count ELEMENTS] [--iters K] [--tcp]\n", argv[0]);
        std::exit(c == 'h' ? 0 : 2);
    }
  }
  if (o.ranks < 1 || o.iters < 1) {
    std::fprintf(stderr, "ranks and iters must be positive\n");
    std::exit(2);
  }
  return o;
}

#define CHECK_HCL(call)                                                                        \
  do {                                                                                         \
    hclResult_t r_ = (call);                                                                   \
    if (r_ != hclSuccess) {                                                                    \
      std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, hclGetErrorString(r_), \
                   hclGetLastError(nullptr));                                                  \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

int runRank(int rank, const Options& o, const hclUniqueId& id) {
  hclComm_t comm = nullptr;
  CHECK_HCL(hclCommInitRank(&comm, o.ranks, id, rank));
  std::vector<float> send(o.count), recv(o.count);
  for (size_t i = 0; i < o.count; ++i) send[i] = static_cast<float>((rank + 1) * (i % 7));
  CHECK_HCL(hclAllReduce(send.data(), recv.data(), o.count, hclFloat, hclSum, comm, nullptr));  // warm-up
  std::vector<double> times;
  for (int it = 0; it < o.iters; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_HCL(hclAllReduce(send.data(), recv.data(), o.count, hclFloat, hclSum, comm, nullptr));
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const float factor = static_cast<float>(o.ranks * (o.ranks + 1) / 2);
  size_t wrong = 0;
  for (size_t i = 0; i < o.count; ++i) {
    if (recv[i] != factor * static_cast<float>(i % 7)) ++wrong;
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const double bytes = static_cast<double>(o.count * sizeof(float));
  const double busbw = o.ranks > 1 ? bytes / median * 2.0 * (o.ranks - 1) / o.ranks / 1e9 : 0.0;
  if (rank == 0) {
    char links[8192];
    size_t needed = 0;
    hclCommDescribeLinks(comm, links, sizeof links, &needed);
    std::printf("HCL allreduce demo: %d ranks, %zu floats (%.1f MiB), %d iterations\n", o.ranks, o.count,
                bytes / (1 << 20), o.iters);
    std::printf("Links seen from rank 0:\n%s", links);
  }
  std::printf("rank %d: result %s (%zu wrong of %zu), median time %.3f ms, busbw %.2f GB/s\n", rank,
              wrong == 0 ? "correct" : "WRONG", wrong, o.count, median * 1e3, busbw);
  std::fflush(stdout);
  CHECK_HCL(hclCommDestroy(comm));
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.tcp) setenv("HCL_SHM_DISABLE", "1", 1);
  hclUniqueId id;
  if (hclGetUniqueId(&id) != hclSuccess) {
    std::fprintf(stderr, "hclGetUniqueId failed: %s\n", hclGetLastError(nullptr));
    return 1;
  }
  std::vector<pid_t> children;
  for (int r = 0; r < o.ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(runRank(r, o, id));
    children.push_back(pid);
  }
  int failures = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  std::printf("%s: %d of %d ranks succeeded\n", failures == 0 ? "PASS" : "FAIL", o.ranks - failures, o.ranks);
  return failures == 0 ? 0 : 1;
}
