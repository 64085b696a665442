// NCCL's stream semantics on a real GPU's streams. Ranks are threads of one
// process on the one GPU; every call goes on streams of the device runtime
// (wrapped with hclCommWrapStream, as the NCCL API does), and copies on
// those streams write the inputs and read the results. The cases mirror
// the sim device's one-hardware-queue cases in device_test.cc:
//   - calls between copies on one stream;
//   - a group over two streams and two communicators;
//   - two communicators on one stream in one group;
//   - a group mixing collectives and send/recv on one stream.
// Two ranks of one process on one GPU share the process's hardware queues:
// a rank's stream waiting for HCL holds back the other rank's commands
// queued behind it, and both hang. ctest therefore runs this with
// CUDA_DEVICE_MAX_CONNECTIONS=32; the one-queue case (where a launch that
// copied on other queues while its streams waited would hang) needs ranks
// in separate processes, and torch_nccl_preload_2_one_queue runs it. Each
// case skips, saying why, where no GPU is present. Built once per vendor
// (HCL_GPU_HIP for HIP).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/gpu/gpu_api.h"
#include "hcl.h"

namespace {

constexpr int kRanks = 2;
constexpr auto kCaseLimit = std::chrono::seconds(180);

// Ends the process when a case runs past its limit: a hang here would
// otherwise hold a GPU machine until ctest's timeout.
class Watchdog {
 public:
  explicit Watchdog(std::string what)
      : what_(std::move(what)), thread_([this] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, kCaseLimit, [this] { return done_; })) {
            std::fprintf(stderr, "%s did not finish within %lld s\n", what_.c_str(),
                         static_cast<long long>(kCaseLimit.count()));
            std::_Exit(3);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::jthread thread_;  // last: joins before the members it uses go
};

std::string whyNoGpu() {
  int n = 0;
  const gpuError_t e = gpuGetDeviceCount(&n);
  if (e != gpuSuccess) return std::string("the runtime reports: ") + gpuGetErrorString(e);
  if (n == 0) return "the runtime sees no device";
  if (hclSetDevice(HCL_GPU_PREFIX ":0") != hclSuccess) return hclGetLastError(nullptr);
  return "";
}

std::vector<int> onThreads(const std::function<int(int)>& fn) {
  std::vector<int> rc(kRanks, -1);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < kRanks; ++r) threads.emplace_back([&, r] { rc[static_cast<size_t>(r)] = fn(r); });
  }
  return rc;
}

#define RANK_OK(expr)                                                                             \
  do {                                                                                            \
    if ((expr) != hclSuccess) {                                                                   \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", r, #expr, hclGetLastError(nullptr));      \
      return __LINE__;                                                                            \
    }                                                                                             \
  } while (0)
#define RANK_GPU(expr)                                                                              \
  do {                                                                                              \
    const gpuError_t e_ = (expr);                                                                   \
    if (e_ != gpuSuccess) {                                                                         \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", r, #expr, gpuGetErrorString(e_));           \
      return __LINE__;                                                                              \
    }                                                                                               \
  } while (0)

// Device and pinned host buffers of one rank, freed with it.
class Buffers {
 public:
  ~Buffers() {
    for (void* p : device_) (void)gpuFree(p);
    for (void* p : pinned_) (void)gpuFreeHost(p);
  }
  float* device(size_t count) {
    void* p = nullptr;
    if (gpuMalloc(&p, count * sizeof(float)) != gpuSuccess) return nullptr;
    device_.push_back(p);
    return static_cast<float*>(p);
  }
  float* pinned(size_t count) {
    void* p = nullptr;
    if (gpuHostAlloc(&p, count * sizeof(float), gpuHostAllocPortable) != gpuSuccess) return nullptr;
    pinned_.push_back(p);
    return static_cast<float*>(p);
  }

 private:
  std::vector<void*> device_, pinned_;
};

// Native streams of the runtime and the HCL streams on them, destroyed
// together (the HCL streams first).
class Streams {
 public:
  ~Streams() { (void)destroy(); }
  gpuStream_t native() {
    gpuStream_t s = nullptr;
    if (gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking) != gpuSuccess) return nullptr;
    native_.push_back(s);
    return s;
  }
  hclStream_t wrap(hclComm_t comm, gpuStream_t native) {
    hclStream_t s = nullptr;
    if (!native || hclCommWrapStream(comm, native, &s) != hclSuccess) return nullptr;
    hcl_.push_back(s);
    return s;
  }
  // Waits for all of them; false, with the error printed, on a failure.
  bool synchronize(int r) {
    for (gpuStream_t s : native_) {
      if (const gpuError_t e = gpuStreamSynchronize(s); e != gpuSuccess) {
        std::fprintf(stderr, "rank %d: stream synchronize: %s\n", r, gpuGetErrorString(e));
        return false;
      }
    }
    for (hclStream_t s : hcl_) {
      if (hclStreamSynchronize(s) != hclSuccess) {
        std::fprintf(stderr, "rank %d: hclStreamSynchronize: %s\n", r, hclGetLastError(nullptr));
        return false;
      }
    }
    return true;
  }
  bool destroy() {
    bool ok = true;
    for (hclStream_t s : hcl_) ok = hclStreamDestroy(s) == hclSuccess && ok;
    for (gpuStream_t s : native_) ok = gpuStreamDestroy(s) == gpuSuccess && ok;
    hcl_.clear();
    native_.clear();
    return ok;
  }

 private:
  std::vector<gpuStream_t> native_;
  std::vector<hclStream_t> hcl_;
};

gpuError_t copyAsync(void* dst, const void* src, size_t count, gpuStream_t s) {
  return gpuMemcpyAsync(dst, src, count * sizeof(float), gpuMemcpyDefault, s);
}

// A copy of 64 MiB ahead of the real work on `s`: it holds the stream back
// for about a millisecond, so that a call not ordered after the work before
// it would read its input too early.
class Delay {
 public:
  static constexpr size_t kCount = 16u << 20;
  bool make(Buffers& b) { return (to_ = b.device(kCount)) && (from_ = b.pinned(kCount)); }
  gpuError_t on(gpuStream_t s) const { return copyAsync(to_, from_, kCount, s); }

 private:
  float* to_ = nullptr;
  float* from_ = nullptr;
};

bool expectValues(int r, const char* what, const float* seen, size_t count, const std::function<float(size_t)>& want) {
  for (size_t i = 0; i < count; ++i) {
    if (seen[i] != want(i)) {
      std::fprintf(stderr, "rank %d: %s element %zu is %f, want %f\n", r, what, i, seen[i], want(i));
      return false;
    }
  }
  return true;
}

class GpuStreams : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    const std::string why = whyNoGpu();
    if (!why.empty()) GTEST_SKIP() << "no usable " << HCL_GPU_PREFIX << " device: " << why;
  }
  bool ipc() const { return GetParam(); }

  // `ncomms` communicators of two thread ranks on GPU 0; fn(rank, its
  // communicators) must return 0 on both ranks.
  void onRanks(size_t ncomms, const std::function<int(int, const std::vector<hclComm_t>&)>& fn) {
    const Watchdog watch(testing::UnitTest::GetInstance()->current_test_info()->name());
    setenv("HCL_TIMEOUT_MS", "60000", 1);
    if (!ipc()) setenv("HCL_IPC_DISABLE", "1", 1);
    std::vector<std::vector<hclComm_t>> comms(ncomms, std::vector<hclComm_t>(kRanks, nullptr));
    for (auto& c : comms) {
      hclUniqueId id;
      ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
      const auto rc = onThreads([&](int r) {
        RANK_OK(hclSetDevice(HCL_GPU_PREFIX ":0"));
        RANK_OK(hclCommInitRank(&c[static_cast<size_t>(r)], kRanks, id, r));
        return 0;
      });
      ASSERT_EQ(rc, std::vector<int>(kRanks, 0));
    }
    unsetenv("HCL_IPC_DISABLE");
    unsetenv("HCL_TIMEOUT_MS");
    for (const auto& c : comms) {
      hclPlanInfo_t plan;
      ASSERT_EQ(hclCommGetPlan(c[0], "allreduce", 1 << 20, &plan), hclSuccess);
      EXPECT_EQ(std::string(plan.algorithm) == "ipc", ipc()) << plan.algorithm;
    }
    const auto rc = onThreads([&](int r) {
      if (gpuSetDevice(0) != gpuSuccess) return -2;
      std::vector<hclComm_t> mine;
      for (const auto& c : comms) mine.push_back(c[static_cast<size_t>(r)]);
      return fn(r, mine);
    });
    EXPECT_EQ(rc, std::vector<int>(kRanks, 0)) << "a nonzero entry is the failing line of that rank";
    for (const auto& c : comms) {
      for (hclComm_t comm : c) EXPECT_EQ(hclCommDestroy(comm), hclSuccess);
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Paths, GpuStreams, testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Ipc" : "Staged"; });

// y = allreduce(x) and g = allgather(y), between the copy that writes x
// (behind a long copy) and the copies that read y and g, all on one stream.
// The calls return before the stream has run them. Small and large counts
// (many staging chunks).
TEST_P(GpuStreams, CallsBetweenCopiesOnOneStream) {
  onRanks(1, [&](int r, const std::vector<hclComm_t>& comms) -> int {
    hclComm_t comm = comms[0];
    Streams streams;
    gpuStream_t native = streams.native();
    hclStream_t stream = streams.wrap(comm, native);
    if (!stream) return __LINE__;
    for (size_t count : {size_t{1000}, size_t{3} << 20}) {
      Buffers b;
      Delay delay;
      float *x = b.device(count), *y = b.device(count), *g = b.device(kRanks * count);
      float *in = b.pinned(count), *outY = b.pinned(count), *outG = b.pinned(kRanks * count);
      if (!x || !y || !g || !in || !outY || !outG || !delay.make(b)) return __LINE__;
      for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(r * 1000 + i % 1000);
      RANK_GPU(delay.on(native));
      RANK_GPU(copyAsync(x, in, count, native));
      RANK_OK(hclAllReduce(x, y, count, hclFloat, hclSum, comm, stream));
      RANK_OK(hclAllGather(y, g, count, hclFloat, comm, stream));
      RANK_GPU(copyAsync(outY, y, count, native));
      RANK_GPU(copyAsync(outG, g, kRanks * count, native));
      if (!streams.synchronize(r)) return __LINE__;
      const auto sum = [](size_t i) { return static_cast<float>(1000 + 2 * (i % 1000)); };
      if (!expectValues(r, "allreduce", outY, count, sum)) return __LINE__;
      if (!expectValues(r, "allgather", outG, kRanks * count, [&](size_t i) { return sum(i % count); })) {
        return __LINE__;
      }
    }
    return streams.destroy() ? 0 : __LINE__;
  });
}

// One group: communicator A's allreduce on stream 1 and a send/recv
// exchange on stream 2, communicator B's broadcast on stream 3. Stream 2
// writes the send buffer late (behind a long copy); the allreduce's result
// is read on stream 2 after the group and the exchange's on stream 1, so
// A's launch must join its two streams, as NCCL's does.
TEST_P(GpuStreams, GroupOverTwoStreamsAndTwoCommunicators) {
  onRanks(2, [&](int r, const std::vector<hclComm_t>& comms) -> int {
    const size_t count = 300000, p2pCount = 15000;
    hclComm_t a = comms[0], b = comms[1];
    Streams streams;
    gpuStream_t n1 = streams.native(), n2 = streams.native(), n3 = streams.native();
    hclStream_t a1 = streams.wrap(a, n1), a2 = streams.wrap(a, n2), b1 = streams.wrap(b, n3);
    if (!a1 || !a2 || !b1) return __LINE__;
    {
      Buffers buf;
      Delay delay;
      float *sum = buf.device(count), *bcast = buf.device(count), *mine = buf.device(p2pCount),
            *theirs = buf.device(p2pCount);
      float *in = buf.pinned(count), *root = buf.pinned(count), *tag = buf.pinned(p2pCount);
      float *seenSum = buf.pinned(count), *seenBcast = buf.pinned(count), *seenP2P = buf.pinned(p2pCount);
      if (!sum || !bcast || !mine || !theirs || !in || !root || !tag || !seenSum || !seenBcast || !seenP2P ||
          !delay.make(buf)) {
        return __LINE__;
      }
      for (size_t i = 0; i < count; ++i) {
        in[i] = static_cast<float>(r * 100000 + i % 100000);
        root[i] = static_cast<float>(r == 1 ? 7 * (i % 1000) : 0);
      }
      for (size_t i = 0; i < p2pCount; ++i) tag[i] = static_cast<float>(r + 10);
      RANK_GPU(copyAsync(sum, in, count, n1));
      RANK_GPU(delay.on(n2));
      RANK_GPU(copyAsync(mine, tag, p2pCount, n2));
      RANK_GPU(copyAsync(bcast, root, count, n3));
      RANK_OK(hclGroupStart());
      RANK_OK(hclAllReduce(sum, sum, count, hclFloat, hclSum, a, a1));
      RANK_OK(hclSend(mine, p2pCount, hclFloat, 1 - r, a, a2));
      RANK_OK(hclRecv(theirs, p2pCount, hclFloat, 1 - r, a, a2));
      RANK_OK(hclBcast(bcast, count, hclFloat, 1, b, b1));
      RANK_OK(hclGroupEnd());
      RANK_GPU(copyAsync(seenSum, sum, count, n2));
      RANK_GPU(copyAsync(seenP2P, theirs, p2pCount, n1));
      RANK_GPU(copyAsync(seenBcast, bcast, count, n3));
      if (!streams.synchronize(r)) return __LINE__;
      if (!expectValues(r, "allreduce", seenSum, count,
                        [](size_t i) { return static_cast<float>(100000 + 2 * (i % 100000)); }) ||
          !expectValues(r, "broadcast", seenBcast, count, [](size_t i) { return static_cast<float>(7 * (i % 1000)); }) ||
          !expectValues(r, "received", seenP2P, p2pCount, [&](size_t) { return static_cast<float>(11 - r); })) {
        return __LINE__;
      }
    }
    return streams.destroy() ? 0 : __LINE__;
  });
}

// Two communicators' calls on one native stream in one group (through the
// NCCL API each (communicator, stream) pair is its own HCL stream): A's
// allreduce, then B's send/recv exchange and B's allreduce of A's result.
TEST_P(GpuStreams, TwoCommunicatorsOnOneStreamInOneGroup) {
  onRanks(2, [&](int r, const std::vector<hclComm_t>& comms) -> int {
    const size_t count = 200000, p2pCount = 15000;
    hclComm_t a = comms[0], b = comms[1];
    Streams streams;
    gpuStream_t native = streams.native();
    hclStream_t sa = streams.wrap(a, native), sb = streams.wrap(b, native);
    if (!sa || !sb) return __LINE__;
    {
      Buffers buf;
      Delay delay;
      float *x = buf.device(count), *y = buf.device(count), *z = buf.device(count), *mine = buf.device(p2pCount),
            *theirs = buf.device(p2pCount);
      float *in = buf.pinned(count), *tag = buf.pinned(p2pCount), *seenZ = buf.pinned(count),
            *seenP2P = buf.pinned(p2pCount);
      if (!x || !y || !z || !mine || !theirs || !in || !tag || !seenZ || !seenP2P || !delay.make(buf)) return __LINE__;
      for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(r * 1000 + i % 1000);
      for (size_t i = 0; i < p2pCount; ++i) tag[i] = static_cast<float>(r + 10);
      RANK_GPU(delay.on(native));
      RANK_GPU(copyAsync(x, in, count, native));
      RANK_GPU(copyAsync(mine, tag, p2pCount, native));
      RANK_OK(hclGroupStart());
      RANK_OK(hclAllReduce(x, y, count, hclFloat, hclSum, a, sa));
      RANK_OK(hclSend(mine, p2pCount, hclFloat, 1 - r, b, sb));
      RANK_OK(hclRecv(theirs, p2pCount, hclFloat, 1 - r, b, sb));
      RANK_OK(hclAllReduce(y, z, count, hclFloat, hclMax, b, sb));
      RANK_OK(hclGroupEnd());
      RANK_GPU(copyAsync(seenZ, z, count, native));
      RANK_GPU(copyAsync(seenP2P, theirs, p2pCount, native));
      if (!streams.synchronize(r)) return __LINE__;
      if (!expectValues(r, "z", seenZ, count, [](size_t i) { return static_cast<float>(1000 + 2 * (i % 1000)); }) ||
          !expectValues(r, "received", seenP2P, p2pCount, [&](size_t) { return static_cast<float>(11 - r); })) {
        return __LINE__;
      }
    }
    return streams.destroy() ? 0 : __LINE__;
  });
}

// A group of an allgather, an allreduce in place and a send/recv exchange
// on one stream, whose inputs are written behind a long copy.
TEST_P(GpuStreams, MixedGroupOnOneStream) {
  onRanks(1, [&](int r, const std::vector<hclComm_t>& comms) -> int {
    const size_t count = 200000, p2pCount = 15000;
    hclComm_t comm = comms[0];
    Streams streams;
    gpuStream_t native = streams.native();
    hclStream_t stream = streams.wrap(comm, native);
    if (!stream) return __LINE__;
    {
      Buffers buf;
      Delay delay;
      float *sum = buf.device(count), *gathered = buf.device(kRanks * count), *mine = buf.device(p2pCount),
            *theirs = buf.device(p2pCount);
      float *in = buf.pinned(count), *tag = buf.pinned(p2pCount), *seenSum = buf.pinned(count),
            *seenGathered = buf.pinned(kRanks * count), *seenP2P = buf.pinned(p2pCount);
      if (!sum || !gathered || !mine || !theirs || !in || !tag || !seenSum || !seenGathered || !seenP2P ||
          !delay.make(buf)) {
        return __LINE__;
      }
      for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(r * 100000 + i % 100000);
      for (size_t i = 0; i < p2pCount; ++i) tag[i] = static_cast<float>(r + 10);
      RANK_GPU(delay.on(native));
      RANK_GPU(copyAsync(sum, in, count, native));
      RANK_GPU(copyAsync(mine, tag, p2pCount, native));
      RANK_OK(hclGroupStart());
      RANK_OK(hclAllGather(sum, gathered, count, hclFloat, comm, stream));
      RANK_OK(hclAllReduce(sum, sum, count, hclFloat, hclSum, comm, stream));
      RANK_OK(hclSend(mine, p2pCount, hclFloat, 1 - r, comm, stream));
      RANK_OK(hclRecv(theirs, p2pCount, hclFloat, 1 - r, comm, stream));
      RANK_OK(hclGroupEnd());
      RANK_GPU(copyAsync(seenSum, sum, count, native));
      RANK_GPU(copyAsync(seenGathered, gathered, kRanks * count, native));
      RANK_GPU(copyAsync(seenP2P, theirs, p2pCount, native));
      if (!streams.synchronize(r)) return __LINE__;
      const auto input = [](int rank, size_t i) { return static_cast<float>(rank * 100000 + i % 100000); };
      if (!expectValues(r, "allreduce", seenSum, count, [&](size_t i) { return input(0, i) + input(1, i); }) ||
          !expectValues(r, "allgather", seenGathered, kRanks * count,
                        [&](size_t i) { return input(static_cast<int>(i / count), i % count); }) ||
          !expectValues(r, "received", seenP2P, p2pCount, [&](size_t) { return static_cast<float>(11 - r); })) {
        return __LINE__;
      }
    }
    return streams.destroy() ? 0 : __LINE__;
  });
}

}  // namespace
