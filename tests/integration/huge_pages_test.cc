// Host buffers of the direct algorithms (each in a private mapping of its
// own, as malloc gives for large sizes) become transparent huge pages once
// calls have used them HCL_HUGE_PAGES_AFTER times, with every result exact
// before and after; with 0 they stay as they were.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hcl.h"
#include "multiprocess.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace {

constexpr size_t kHuge = size_t{2} << 20;
constexpr int kNotDirect = 77;  // a rank's exit code: the plan reads no peer buffers here

std::string thpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  return line;
}

// Why this machine cannot collapse anonymous memory into huge pages, or "".
std::string collapseUnavailable() {
  const std::string mode = thpMode();
  if (mode.empty()) return "no transparent huge pages in this kernel";
  if (mode.find("[never]") != std::string::npos) return "transparent huge pages are set to never";
  std::ifstream size("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  size_t bytes = 0;
  if (!(size >> bytes) || bytes != kHuge) return "the huge page size here is not 2 MiB";
  void* m = mmap(nullptr, 2 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return "mmap failed";
  std::memset(m, 1, 2 * kHuge);
  void* region = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(m) + kHuge - 1) / kHuge * kHuge);
  const int err = madvise(region, kHuge, MADV_COLLAPSE) == 0 ? 0 : errno;
  munmap(m, 2 * kHuge);
  if (err == EINVAL) return "the kernel has no MADV_COLLAPSE (Linux 6.1)";
  if (err != 0) return std::string("MADV_COLLAPSE failed: ") + std::strerror(err);
  return "";
}

// AnonHugePages of the mapping that holds p, in bytes (from /proc/self/smaps).
size_t anonHugeBytesAt(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stoull(line.substr(14)) * 1024;
    }
  }
  return 0;
}

// Two buffers in mappings of their own, as malloc gives for large sizes;
// a page kept inaccessible between them stops the kernel merging them.
class TwoBuffers {
 public:
  explicit TwoBuffers(size_t bytes) : bytes_(bytes) {
    void* m = mmap(nullptr, 2 * bytes + kGuard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    base_ = static_cast<std::byte*>(m);
    if (mprotect(base_ + bytes, kGuard, PROT_NONE) != 0) {
      munmap(base_, 2 * bytes + kGuard);
      base_ = nullptr;
    }
  }
  ~TwoBuffers() {
    if (base_) munmap(base_, 2 * bytes_ + kGuard);
  }
  TwoBuffers(const TwoBuffers&) = delete;
  TwoBuffers& operator=(const TwoBuffers&) = delete;
  bool ok() const { return base_ != nullptr; }
  float* first() const { return reinterpret_cast<float*>(base_); }
  float* second() const { return reinterpret_cast<float*>(base_ + bytes_ + kGuard); }

 private:
  static constexpr size_t kGuard = 4096;
  size_t bytes_;
  std::byte* base_ = nullptr;
};

// Each of 2 ranks all-reduces 6 MiB of floats `calls` times, checking every
// result, then reports how much of each buffer is in huge pages through its
// exit code's bits (1: send, 2: receive) plus 4.
std::vector<hcltest::ProcessResult> allReduceMallocBuffers(const std::string& after, int calls) {
  hcltest::EnvList env = hcltest::rank0RootEnv("30000");
  env.emplace_back("HCL_HUGE_PAGES_AFTER", after);
  return hcltest::runProcesses(
      2,
      [calls](int rank) {
        hclUniqueId id;
        RANK_HCL(hclGetUniqueId(&id));
        hclComm_t comm;
        RANK_HCL(hclCommInitRank(&comm, 2, id, rank));
        const size_t count = (size_t{6} << 20) / sizeof(float);
        hclPlanInfo_t plan{};
        RANK_HCL(hclCommGetPlan(comm, "allreduce", count * sizeof(float), &plan));
        if (std::strcmp(plan.algorithm, "direct") != 0 && std::strcmp(plan.algorithm, "window") != 0) {
          std::fprintf(stderr, "rank %d: the plan is %s, which reads no peer buffers\n", rank, plan.algorithm);
          hclCommDestroy(comm);
          return kNotDirect;
        }
        TwoBuffers buffers(count * sizeof(float));
        RANK_CHECK(buffers.ok(), "mmap failed");
        float* send = buffers.first();
        float* recv = buffers.second();
        for (int call = 0; call < calls; ++call) {
          for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((i % 1000) * (rank + 1) + call);
          RANK_HCL(hclAllReduce(send, recv, count, hclFloat, hclSum, comm, nullptr));
          for (size_t i = 0; i < count; ++i) {
            const float want = static_cast<float>((i % 1000) * 3 + 2 * call);
            RANK_CHECK(recv[i] == want, "call %d element %zu: %g, want %g", call, i, recv[i], want);
          }
        }
        const int code = 4 | (anonHugeBytesAt(send) >= 2 * kHuge ? 1 : 0) | (anonHugeBytesAt(recv) >= 2 * kHuge ? 2 : 0);
        RANK_HCL(hclCommDestroy(comm));
        return code;
      },
      120, env);
}

bool madviseMode() { return thpMode().find("[madvise]") != std::string::npos; }

TEST(HugePages, MallocBuffersOfTheDirectAllReduceCollapseAfterTheirUses) {
  if (const std::string why = collapseUnavailable(); !why.empty()) GTEST_SKIP() << why;
  if (!madviseMode()) GTEST_SKIP() << "transparent huge pages are not in madvise mode, so buffers may be huge anyway";
  // The kernel may refuse an ask for the moment (no free huge page while
  // other tests hold memory, as seen once in the parallel suite); the advisor
  // asks again after 2, 4 and 8 more uses, so 16 calls give four asks.
  const auto results = allReduceMallocBuffers("1", 16);
  for (const auto& r : results) {
    if (r.exited && r.code == kNotDirect) GTEST_SKIP() << "no direct algorithm between these processes (see stderr)";
    ASSERT_TRUE(r.exited) << "rank " << r.rank << " killed by signal " << r.code;
    ASSERT_TRUE(r.code & 4) << "rank " << r.rank << " failed with " << r.code;
    EXPECT_TRUE(r.code & 1) << "rank " << r.rank << ": its send buffer has under 4 MiB in huge pages";
    EXPECT_TRUE(r.code & 2) << "rank " << r.rank << ": its receive buffer has under 4 MiB in huge pages";
  }
}

TEST(HugePages, ZeroLeavesMallocBuffersAsTheyWere) {
  if (!madviseMode()) GTEST_SKIP() << "transparent huge pages are not in madvise mode, so buffers may be huge anyway";
  const auto results = allReduceMallocBuffers("0", 4);
  for (const auto& r : results) {
    if (r.exited && r.code == kNotDirect) GTEST_SKIP() << "no direct algorithm between these processes (see stderr)";
    ASSERT_TRUE(r.exited) << "rank " << r.rank << " killed by signal " << r.code;
    EXPECT_EQ(r.code, 4) << "rank " << r.rank << " (1: send buffer huge, 2: receive buffer huge, no 4: failed)";
  }
}

}  // namespace
