// Communicators on devices: the host-staged path, ranks mixing the CPU and a
// GPU in one communicator, NCCL stream semantics, and the device choice.
// The sim device stands in for a GPU here: its memory is scrambled, so any
// path that reads device memory without going through the device fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "collective_checks.h"
#include "multiprocess.h"
#include "device/sim/sim_device.h"
#include "device/sim/sim_memory.h"
#include "hcl.h"
#include "thread_ranks.h"

namespace {

// Creates one communicator per thread, each on the device its rank names.
std::vector<hclComm_t> initOnDevices(const std::vector<std::string>& devices) {
  const int n = static_cast<int>(devices.size());
  hclUniqueId id;
  EXPECT_EQ(hclGetUniqueId(&id), hclSuccess);
  std::vector<hclComm_t> comms(devices.size(), nullptr);
  std::vector<std::jthread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(hclSetDevice(devices[static_cast<size_t>(r)].c_str()), hclSuccess) << hclGetLastError(nullptr);
      ASSERT_EQ(hclCommInitRank(&comms[static_cast<size_t>(r)], n, id, r), hclSuccess) << hclGetLastError(nullptr);
    });
  }
  threads.clear();
  return comms;
}

using hcltest::onThreads;

// In a rank process: every collective at a few sizes, then the communicator
// destroyed; 0 when all went right.
int checkAllAndDestroy(hclComm_t comm, bool deviceMemory) {
  hcltest::CheckConfig cfg;
  cfg.counts = {1, 3001};
  cfg.bigCounts = {20000};
  cfg.deviceMemory = deviceMemory;
  const int rc = hcltest::checkAllCollectives(comm, cfg);
  RANK_HCL(hclCommDestroy(comm));
  return rc;
}

// The peer's tag (its rank + 10) in every element a send/recv exchange received.
bool receivedPeersTag(const std::vector<float>& seen, int r) {
  for (float v : seen) {
    if (v != static_cast<float>(11 - r)) {
      std::fprintf(stderr, "rank %d received %f from its peer, want %d\n", r, v, 11 - r);
      return false;
    }
  }
  return true;
}

// Ends a group; false, with the error printed, on a failure.
bool groupEnded(hclComm_t comm, int r) {
  if (hclGroupEnd() == hclSuccess) return true;
  std::fprintf(stderr, "rank %d: %s\n", r, hclGetLastError(comm));
  return false;
}

// Waits for the native stream and then the HCL stream; false on an error.
bool drained(hcl::sim::NativeStream& native, hclStream_t stream, hclComm_t comm, int r) {
  native.synchronize();
  if (hclStreamSynchronize(stream) == hclSuccess) return true;
  std::fprintf(stderr, "rank %d: %s\n", r, hclGetLastError(comm));
  return false;
}

// A send/recv exchange with the other of two ranks, on device buffers: this
// rank sends its tag (rank + 10) and receives the peer's.
struct PeerExchange {
  static constexpr size_t kCount = 1000;
  PeerExchange(hclComm_t c, int rank)
      : comm(c), r(rank), tag(kCount, static_cast<float>(rank + 10)), seen(kCount, -1.0f) {}
  ~PeerExchange() {
    for (void* p : {mine, theirs}) {
      if (p) hclCommMemFree(comm, p);
    }
  }
  bool allocate() {
    return hclCommMemAlloc(comm, &mine, kCount * sizeof(float)) == hclSuccess &&
           hclCommMemAlloc(comm, &theirs, kCount * sizeof(float)) == hclSuccess;
  }
  // On the native stream, before the exchange / after it.
  void writeTag() { hclCommMemcpy(comm, mine, tag.data(), kCount * sizeof(float)); }
  void readReceived() { hclCommMemcpy(comm, seen.data(), theirs, kCount * sizeof(float)); }
  bool post(hclStream_t stream) {
    return hclSend(mine, kCount, hclFloat, 1 - r, comm, stream) == hclSuccess &&
           hclRecv(theirs, kCount, hclFloat, 1 - r, comm, stream) == hclSuccess;
  }
  bool receivedPeersTag() const { return ::receivedPeersTag(seen, r); }

  hclComm_t comm;
  int r;
  void *mine = nullptr, *theirs = nullptr;
  std::vector<float> tag, seen;
};

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("HCL_STAGE_CHUNK_BYTES", "8192", 1); }  // many chunks at small sizes
  void TearDown() override { unsetenv("HCL_STAGE_CHUNK_BYTES"); }
};

TEST_F(DeviceTest, MixedCpuAndSimRanksRunEveryCollective) {
  const std::vector<std::string> devices{"sim:0", "cpu", "sim:1"};
  auto comms = initOnDevices(devices);
  hcltest::CheckConfig cfg;
  cfg.counts = {0, 1, 7, 3001};
  cfg.bigCounts = {40000};  // several chunks, every row of allgather/alltoall split
  auto rc = onThreads(3, [&](int r) {
    hcltest::CheckConfig mine = cfg;
    mine.deviceMemory = devices[static_cast<size_t>(r)] != "cpu";
    return hcltest::checkAllCollectives(comms[static_cast<size_t>(r)], mine);
  });
  EXPECT_EQ(rc, std::vector<int>(3, 0));
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// Ranks as processes, over shared memory and over TCP: each publishes its
// device at bootstrap, and every rank stages because one rank is a GPU.
TEST_F(DeviceTest, MixedRanksAsProcessesOverShmAndTcp) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan cannot follow threads started after fork in a multi-threaded process";
#endif
  for (bool tcp : {false, true}) {
    // Rank 0 runs the bootstrap root (HCL_COMM_ID), so the parent forks with
    // no threads: a root thread in the parent could hold a lock (ASan's
    // allocator's, for one) at the fork, and the child would wait on it forever.
    hcltest::EnvList env = hcltest::rank0RootEnv("60000");
    if (tcp) env.push_back({"HCL_SHM_DISABLE", "1"});
    const char* devices[] = {"cpu", "sim:0", "sim:1", "cpu"};
    auto results = hcltest::runProcesses(
        4,
        [&](int rank) {
          // The thread's choice, not HCL_DEVICE: a forked child inherits the
          // parent thread's hclSetDevice choice, which would win over the variable.
          RANK_HCL(hclSetDevice(devices[rank]));
          hclUniqueId id;
          RANK_HCL(hclGetUniqueId(&id));
          hclComm_t comm = nullptr;
          RANK_HCL(hclCommInitRank(&comm, 4, id, rank));
          char name[32];
          RANK_HCL(hclCommGetDevice(comm, name, sizeof name));
          RANK_CHECK(std::string(name) == devices[rank], "rank %d runs on %s, want %s", rank, name, devices[rank]);
          return checkAllAndDestroy(comm, std::string(devices[rank]) != "cpu");
        },
        300, env);
    EXPECT_EQ(hcltest::describeFailures(results), "") << (tcp ? "tcp" : "shm");
  }
}

TEST_F(DeviceTest, CommunicatorReportsItsDevice) {
  auto comms = initOnDevices({"sim:1", "cpu"});
  char name[32];
  ASSERT_EQ(hclCommGetDevice(comms[0], name, sizeof name), hclSuccess);
  EXPECT_STREQ(name, "sim:1");
  ASSERT_EQ(hclCommGetDevice(comms[1], name, sizeof name), hclSuccess);
  EXPECT_STREQ(name, "cpu");
  int index = -2;
  ASSERT_EQ(hclCommCuDevice(comms[0], &index), hclSuccess);
  EXPECT_EQ(index, 1);
  ASSERT_EQ(hclCommCuDevice(comms[1], &index), hclSuccess);
  EXPECT_EQ(index, -1);
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// The two ways device buffers move between sim ranks of one host: the IPC
// path (the default there) and staging through host memory (HCL_IPC_DISABLE).
class DevicePathTest : public DeviceTest, public ::testing::WithParamInterface<bool> {
 protected:
  bool ipc() const { return GetParam(); }
  std::vector<hclComm_t> initOnPath(const std::vector<std::string>& devices) {
    if (!ipc()) setenv("HCL_IPC_DISABLE", "1", 1);
    auto comms = initOnDevices(devices);
    unsetenv("HCL_IPC_DISABLE");
    for (hclComm_t c : comms) {
      hclPlanInfo_t plan;
      EXPECT_EQ(hclCommGetPlan(c, "allreduce", 4096, &plan), hclSuccess);
      EXPECT_EQ(std::string(plan.algorithm) == "ipc", ipc()) << plan.algorithm;
    }
    return comms;
  }
  // Two thread ranks, with `ncomms` communicators each, each on a device
  // whose streams share one hardware queue: fn(rank, its communicators) must
  // return 0 on both.
  void onOneHardwareQueue(size_t ncomms, const std::function<int(int, const std::vector<hclComm_t>&)>& fn) {
    setenv("HCL_SIM_SHARED_QUEUE", "1", 1);
    setenv("HCL_TIMEOUT_MS", "10000", 1);
    std::vector<std::vector<hclComm_t>> comms;
    // One device per rank: two ranks' waits in one queue would hold each other back.
    for (size_t i = 0; i < ncomms; ++i) comms.push_back(initOnPath({"sim:0", "sim:1"}));
    unsetenv("HCL_TIMEOUT_MS");
    auto rc = onThreads(2, [&](int r) {
      std::vector<hclComm_t> mine;
      for (const auto& c : comms) mine.push_back(c[static_cast<size_t>(r)]);
      return fn(r, mine);
    });
    unsetenv("HCL_SIM_SHARED_QUEUE");
    EXPECT_EQ(rc, std::vector<int>(2, 0));
    for (const auto& cs : comms) {
      for (hclComm_t c : cs) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
    }
  }
  // The same with one communicator, and fn(rank, communicator, a native
  // stream whose command queue holds 8 commands, the HCL stream on it).
  void onOneNativeStream(const std::function<int(int, hclComm_t, hcl::sim::NativeStream&, hclStream_t)>& fn) {
    onOneHardwareQueue(1, [&](int r, const std::vector<hclComm_t>& comms) -> int {
      hcl::sim::NativeStream native(8);
      hclStream_t stream = nullptr;
      if (hclCommWrapStream(comms[0], &native, &stream) != hclSuccess) return 1;
      const int rc = fn(r, comms[0], native, stream);
      native.synchronize();
      return hclStreamDestroy(stream) == hclSuccess ? rc : 100;
    });
  }
  // Two thread ranks on sim:0, made with `env` set to `value`: fn(rank,
  // communicator, a native stream, the HCL stream on it) must return 0 on
  // both, and the HCL stream is destroyed after.
  void onNativeStreams(const char* env, const char* value,
                       const std::function<int(int, hclComm_t, hcl::sim::NativeStream&, hclStream_t)>& fn) {
    setenv(env, value, 1);
    auto comms = initOnPath({"sim:0", "sim:0"});
    unsetenv(env);
    auto rc = onThreads(2, [&](int r) -> int {
      hclComm_t comm = comms[static_cast<size_t>(r)];
      hcl::sim::NativeStream native;
      hclStream_t stream = nullptr;
      if (hclCommWrapStream(comm, &native, &stream) != hclSuccess) return 1;
      const int result = fn(r, comm, native, stream);
      native.synchronize();
      return hclStreamDestroy(stream) == hclSuccess ? result : 100;
    });
    EXPECT_EQ(rc, std::vector<int>(2, 0));
    for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
  }
};

INSTANTIATE_TEST_SUITE_P(Paths, DevicePathTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Ipc" : "Staged"; });

// NCCL's stream semantics on a native stream: the call returns while earlier
// work on the stream is still pending, runs after it, and later work on the
// stream sees its result. The earlier work outlasts the communicator's
// timeout: waiting for it is not waiting on a stalled peer. Also with host
// buffers, for which the first call sets up its device stand-ins (IPC
// path) or pinned memory: with nothing to replace, that does not wait for
// the stream either.
TEST_P(DevicePathTest, OperationOnNativeStreamIsOrderedAndAsynchronous) {
  for (const bool hostBuffers : {false, true}) {
    SCOPED_TRACE(hostBuffers ? "host buffers" : "device buffers");
    const size_t count = 50000;
    onNativeStreams("HCL_TIMEOUT_MS", "300", [&](int r, hclComm_t comm, hcl::sim::NativeStream& native,
                                                 hclStream_t stream) -> int {
      std::vector<float> host(count, -1.0f);
      void* buf = host.data();
      if (!hostBuffers && hclCommMemAlloc(comm, &buf, count * sizeof(float)) != hclSuccess) return 2;
      const auto copy = [&](void* dst, const void* src) {
        if (hostBuffers) {
          std::memcpy(dst, src, count * sizeof(float));
        } else {
          hclCommMemcpy(comm, dst, src, count * sizeof(float));
        }
      };
      std::vector<float> input(count, static_cast<float>(r + 1));
      // Earlier work on the native stream: blocks until the test lets it
      // go (or, should the call wait for the stream, for 10 s), then writes
      // the input.
      std::promise<void> go;
      auto released = go.get_future().share();
      std::atomic<bool> heldTooLong{false};
      native.launch([&, released] {
        if (released.wait_for(std::chrono::seconds(10)) != std::future_status::ready) heldTooLong = true;
        copy(buf, input.data());
      });
      if (hclAllReduce(buf, buf, count, hclFloat, hclSum, comm, stream) != hclSuccess) return 3;
      // The call returned with the earlier work still blocked: it did not wait.
      if (heldTooLong) {
        std::fprintf(stderr, "rank %d: the call waited for the earlier work on the stream\n", r);
        return 4;
      }
      if (!(hclStreamQuery(stream) == hclInProgress)) return 4;
      std::vector<float> seen(count, -1.0f);
      native.launch([&] { copy(seen.data(), buf); });
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // past the 300 ms timeout
      go.set_value();
      native.synchronize();
      if (hclStreamSynchronize(stream) != hclSuccess) return 5;
      for (float v : seen) {
        if (v != 3.0f) {
          std::fprintf(stderr, "rank %d saw %f, want 3\n", r, v);
          return 6;
        }
      }
      if (!hostBuffers) hclCommMemFree(comm, buf);
      return 0;
    });
  }
}

// Host buffers whose call has several blocks per rank (all-gather's
// output, reduce-scatter's input, both of all-to-all's) are copied to and
// from the staging slots in host memory. A device runtime makes such a copy
// at once, not in stream order (the sim refuses it on a stream), so the
// worker makes it: after the stream's earlier work wrote the input, before
// its later work reads the output.
TEST_P(DevicePathTest, HostBuffersWithSeveralBlocksOnANativeStream) {
  const size_t count = 50000;
  // Several chunks per call.
  onNativeStreams("HCL_STAGE_CHUNK_BYTES", "65536", [&](int r, hclComm_t comm, hcl::sim::NativeStream& native,
                                                        hclStream_t stream) -> int {
    const auto value = [](int rank, size_t i) { return static_cast<float>(rank * 100000 + static_cast<int>(i % 9973)); };
    std::vector<float> in(2 * count, -1.0f), gathered(2 * count, -1.0f), scattered(count, -1.0f),
        exchanged(2 * count, -1.0f);
    std::promise<void> go;
    auto released = go.get_future().share();
    native.launch([&, released] {
      released.wait();
      for (size_t i = 0; i < in.size(); ++i) in[i] = value(r, i);
    });
    // The largest call first: on the IPC path, growing the device stand-ins
    // of host buffers waits for the stream, which the test holds.
    if (hclAlltoAll(in.data(), exchanged.data(), count, hclFloat, comm, stream) != hclSuccess) return 4;
    if (hclAllGather(in.data(), gathered.data(), count, hclFloat, comm, stream) != hclSuccess) return 2;
    if (hclReduceScatter(in.data(), scattered.data(), count, hclFloat, hclSum, comm, stream) != hclSuccess) return 3;
    std::vector<float> seenGathered, seenScattered, seenExchanged;
    native.launch([&] {
      seenGathered = gathered;
      seenScattered = scattered;
      seenExchanged = exchanged;
    });
    go.set_value();
    native.synchronize();
    if (hclStreamSynchronize(stream) != hclSuccess) {
      std::fprintf(stderr, "rank %d: %s\n", r, hclGetLastError(comm));
      return 5;
    }
    for (size_t i = 0; i < count; ++i) {
      for (int p = 0; p < 2; ++p) {
        const size_t at = static_cast<size_t>(p) * count + i;
        const float wantGathered = value(p, i);
        const float wantExchanged = value(p, static_cast<size_t>(r) * count + i);
        if (seenGathered[at] != wantGathered || seenExchanged[at] != wantExchanged) {
          std::fprintf(stderr, "rank %d block %d element %zu: all-gather %f (want %f), all-to-all %f (want %f)\n", r,
                       p, i, seenGathered[at], wantGathered, seenExchanged[at], wantExchanged);
          return 6;
        }
      }
      const size_t mine = static_cast<size_t>(r) * count + i;
      if (seenScattered[i] != value(0, mine) + value(1, mine)) {
        std::fprintf(stderr, "rank %d element %zu: reduce-scatter %f\n", r, i, seenScattered[i]);
        return 7;
      }
    }
    return 0;
  });
}

// A call whose peer never joins fails within the timeout, also on a stream
// whose command queue is too shallow for all of the call's commands: once
// the call's job has failed, it keeps releasing what the call's stream side
// issues until that side is done (without that, the call never returns).
TEST_P(DevicePathTest, FailedCallLetsAShallowStreamGo) {
  setenv("HCL_TIMEOUT_MS", "300", 1);
  auto comms = initOnPath({"sim:0", "sim:0"});
  unsetenv("HCL_TIMEOUT_MS");
  const size_t count = 1u << 18;  // 128 chunks of the fixture's 8 KiB
  hclComm_t comm = comms[0];      // rank 1 never calls
  hcl::sim::NativeStream native(4);
  hclStream_t stream = nullptr;
  ASSERT_EQ(hclCommWrapStream(comm, &native, &stream), hclSuccess);
  void* buf = nullptr;
  ASSERT_EQ(hclCommMemAlloc(comm, &buf, count * sizeof(float)), hclSuccess);
  EXPECT_EQ(hclAllReduce(buf, buf, count, hclFloat, hclSum, comm, stream), hclSuccess);
  native.synchronize();
  EXPECT_NE(hclStreamSynchronize(stream), hclSuccess);
  EXPECT_NE(std::string(hclGetLastError(comm)).find("rank 1"), std::string::npos) << hclGetLastError(comm);
  hclCommMemFree(comm, buf);
  EXPECT_EQ(hclStreamDestroy(stream), hclSuccess);
  for (hclComm_t c : comms) hclCommDestroy(c);
}

// NCCL lets a communicator be destroyed while its calls are still queued on
// a stream: they complete. The commands a call leaves on the stream after
// its last release (copies back from the staging memory, IPC segments that
// read its table of peers' buffers) read memory of the communicator, which
// must outlive them. The sim's stream copies take their time before the
// data moves, and its freed pinned memory is overwritten, so a command that
// ran after the free would move garbage.
TEST_P(DevicePathTest, DestroyWithACallStillOnItsStreamLetsTheCallFinish) {
  setenv("HCL_SIM_COPY_GBPS", "1", 1);
  setenv("HCL_STAGE_CHUNK_BYTES", "1048576", 1);
  auto comms = initOnPath({"sim:0", "sim:1"});
  unsetenv("HCL_STAGE_CHUNK_BYTES");
  const size_t count = 1u << 18;  // 1 MiB: one chunk, copied back after the last release
  auto rc = onThreads(2, [&](int r) -> int {
    hclComm_t comm = comms[static_cast<size_t>(r)];
    hcl::Device* device = nullptr;
    if (!hcl::sim::runtime().device(r, &device).ok()) return 1;
    hcl::sim::NativeStream native;
    hclStream_t stream = nullptr;
    if (hclCommWrapStream(comm, &native, &stream) != hclSuccess) return 2;
    void* buf = nullptr;
    if (!device->allocDevice(count * sizeof(float), &buf).ok()) return 3;
    std::vector<float> values(count, static_cast<float>(r + 1));
    if (!device->copy(buf, values.data(), count * sizeof(float)).ok()) return 4;
    if (hclAllReduce(buf, buf, count, hclFloat, hclSum, comm, stream) != hclSuccess) return 5;
    if (hclCommDestroy(comm) != hclSuccess) return 6;
    native.synchronize();
    const hclResult_t synced = hclStreamSynchronize(stream);
    if (synced != hclSuccess) {
      std::fprintf(stderr, "rank %d: the stream failed: %s\n", r, hclGetLastError(nullptr));
      return 7;
    }
    if (!device->copy(values.data(), buf, count * sizeof(float)).ok()) return 8;
    for (size_t i = 0; i < count; ++i) {
      if (values[i] != 3.0f) {
        std::fprintf(stderr, "rank %d: element %zu is %f after the destroy, want 3\n", r, i, values[i]);
        return 9;
      }
    }
    (void)device->freeDevice(buf);
    return hclStreamDestroy(stream) == hclSuccess ? 0 : 10;
  });
  unsetenv("HCL_SIM_COPY_GBPS");
  EXPECT_EQ(rc, std::vector<int>(2, 0));
}

// A sequence of collectives and a send/recv exchange on one native stream
// per rank, the way a framework issues them: nothing waits on the host
// between the calls. The stream's command queue is shallow, as a GPU
// runtime's is when full: a call's stream-side commands can only all be
// issued while HCL's worker already runs the call and releases its chunks.
TEST_P(DevicePathTest, CollectivesInSequenceOnANativeStream) {
  setenv("HCL_STAGE_CHUNK_BYTES", "65536", 1);  // 64 chunks per 4 MiB call
  auto comms = initOnPath({"sim:0", "sim:0"});
  const size_t count = 1u << 20;
  auto rc = onThreads(2, [&](int r) -> int {
    hclComm_t comm = comms[static_cast<size_t>(r)];
    hcl::sim::NativeStream native(6);
    hclStream_t stream = nullptr;
    if (hclCommWrapStream(comm, &native, &stream) != hclSuccess) return 1;
    void *a = nullptr, *b = nullptr;
    if (hclCommMemAlloc(comm, &a, count * sizeof(float)) != hclSuccess) return 2;
    if (hclCommMemAlloc(comm, &b, count * sizeof(float)) != hclSuccess) return 2;
    std::vector<float> ones(count, static_cast<float>(r + 1)), root(count);
    for (size_t i = 0; i < count; ++i) root[i] = static_cast<float>(i);
    native.launch([&] { hclCommMemcpy(comm, a, ones.data(), count * sizeof(float)); });
    if (hclAllReduce(a, a, count, hclFloat, hclSum, comm, stream) != hclSuccess) return 3;
    if (hclAllReduce(a, a, count, hclFloat, hclMax, comm, stream) != hclSuccess) return 4;
    native.launch([&] { hclCommMemcpy(comm, b, r == 1 ? root.data() : ones.data(), count * sizeof(float)); });
    if (hclBcast(b, count, hclFloat, 1, comm, stream) != hclSuccess) return 5;
    // A send/recv exchange with the peer, grouped, on the same stream.
    void *mine = nullptr, *theirs = nullptr;
    if (hclCommMemAlloc(comm, &mine, 1000 * sizeof(float)) != hclSuccess) return 2;
    if (hclCommMemAlloc(comm, &theirs, 1000 * sizeof(float)) != hclSuccess) return 2;
    std::vector<float> tag(1000, static_cast<float>(r + 10)), seenP2P(1000, -1.0f);
    native.launch([&] { hclCommMemcpy(comm, mine, tag.data(), tag.size() * sizeof(float)); });
    if (hclGroupStart() != hclSuccess || hclSend(mine, 1000, hclFloat, 1 - r, comm, stream) != hclSuccess ||
        hclRecv(theirs, 1000, hclFloat, 1 - r, comm, stream) != hclSuccess || hclGroupEnd() != hclSuccess) {
      return 9;
    }
    std::vector<float> seenA(count, -1.0f), seenB(count, -1.0f);
    native.launch([&] {
      hclCommMemcpy(comm, seenA.data(), a, count * sizeof(float));
      hclCommMemcpy(comm, seenB.data(), b, count * sizeof(float));
      hclCommMemcpy(comm, seenP2P.data(), theirs, seenP2P.size() * sizeof(float));
    });
    native.synchronize();
    if (hclStreamSynchronize(stream) != hclSuccess) return 6;
    for (size_t i = 0; i < count; ++i) {
      if (seenA[i] != 3.0f || seenB[i] != root[i]) {
        std::fprintf(stderr, "rank %d element %zu: allreduce %f (want 3), bcast %f (want %f)\n", r, i, seenA[i],
                     seenB[i], root[i]);
        return 7;
      }
    }
    if (!receivedPeersTag(seenP2P, r)) return 10;
    hclCommMemFree(comm, a);
    hclCommMemFree(comm, b);
    hclCommMemFree(comm, mine);
    hclCommMemFree(comm, theirs);
    return hclStreamDestroy(stream) == hclSuccess ? 0 : 8;
  });
  EXPECT_EQ(rc, std::vector<int>(2, 0));
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// A group that mixes collectives with send/recv, on one native stream per
// rank, on a device whose streams share one hardware queue: while the stream
// is stopped waiting for HCL's worker, the device starts no other copy. A
// worker that copied on a queue of its own then would never finish, and the
// stream would wait for it forever; the copies must be on the stream. On the
// IPC path the collectives run on the device and the send/recv staged.
TEST_P(DevicePathTest, MixedGroupOnANativeStreamWithOneHardwareQueue) {
  onOneNativeStream([&](int r, hclComm_t comm, hcl::sim::NativeStream& native, hclStream_t stream) -> int {
    const size_t count = 20000;
    PeerExchange p2p(comm, r);
    void *sum = nullptr, *gathered = nullptr;
    if (hclCommMemAlloc(comm, &sum, count * sizeof(float)) != hclSuccess ||
        hclCommMemAlloc(comm, &gathered, 2 * count * sizeof(float)) != hclSuccess || !p2p.allocate()) {
      return 2;
    }
    std::vector<float> input(count);
    for (size_t i = 0; i < count; ++i) input[i] = static_cast<float>(r * 100000 + i);
    native.launch([&] {
      hclCommMemcpy(comm, sum, input.data(), count * sizeof(float));
      p2p.writeTag();
    });
    if (hclGroupStart() != hclSuccess) return 3;
    if (hclAllGather(sum, gathered, count, hclFloat, comm, stream) != hclSuccess) return 4;
    if (hclAllReduce(sum, sum, count, hclFloat, hclSum, comm, stream) != hclSuccess) return 5;
    if (!p2p.post(stream)) return 6;
    if (!groupEnded(comm, r)) return 8;
    std::vector<float> seenSum(count, -1.0f), seenGathered(2 * count, -1.0f);
    native.launch([&] {
      hclCommMemcpy(comm, seenSum.data(), sum, count * sizeof(float));
      hclCommMemcpy(comm, seenGathered.data(), gathered, 2 * count * sizeof(float));
      p2p.readReceived();
    });
    if (!drained(native, stream, comm, r)) return 9;
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(100000 + 2 * i);
      const float g0 = static_cast<float>(i), g1 = static_cast<float>(100000 + i);
      if (seenSum[i] != want || seenGathered[i] != g0 || seenGathered[count + i] != g1) {
        std::fprintf(stderr, "rank %d element %zu: allreduce %f (want %f), allgather %f, %f (want %f, %f)\n", r, i,
                     seenSum[i], want, seenGathered[i], seenGathered[count + i], g0, g1);
        return 10;
      }
    }
    if (!p2p.receivedPeersTag()) return 11;
    for (void* p : {sum, gathered}) hclCommMemFree(comm, p);
    return 0;
  });
}

// One device buffer sent to the peer and received into in one group, on a
// native stream (the launch's stand-ins for one buffer are one): each rank
// ends with the peer's data, as MPI_Sendrecv_replace gives.
TEST_P(DevicePathTest, SendRecvExchangeInPlaceOnANativeStream) {
  onOneNativeStream([&](int r, hclComm_t comm, hcl::sim::NativeStream& native, hclStream_t stream) -> int {
    const size_t count = 30000;
    void* buf = nullptr;
    if (hclCommMemAlloc(comm, &buf, count * sizeof(float)) != hclSuccess) return 2;
    std::vector<float> mine(count), seen(count, -1.0f);
    for (size_t i = 0; i < count; ++i) mine[i] = static_cast<float>(r * 100000 + i);
    native.launch([&] { hclCommMemcpy(comm, buf, mine.data(), count * sizeof(float)); });
    if (hclGroupStart() != hclSuccess) return 3;
    if (hclSend(buf, count, hclFloat, 1 - r, comm, stream) != hclSuccess) return 4;
    if (hclRecv(buf, count, hclFloat, 1 - r, comm, stream) != hclSuccess) return 5;
    if (!groupEnded(comm, r)) return 6;
    native.launch([&] { hclCommMemcpy(comm, seen.data(), buf, count * sizeof(float)); });
    if (!drained(native, stream, comm, r)) return 7;
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>((1 - r) * 100000 + i);
      if (seen[i] != want) {
        std::fprintf(stderr, "rank %d element %zu: %f, want %f\n", r, i, seen[i], want);
        return 8;
      }
    }
    hclCommMemFree(comm, buf);
    return 0;
  });
}

// A group whose later collective reads what an earlier one wrote, with a
// send/recv exchange, on one native stream with one hardware queue:
// y = allreduce(x), then z = pre-multiplied sum of y with each rank's
// scalar (r + 1) in device memory, so z = 3y. On the IPC path the first runs
// on the devices between two segments on stand-ins; on the staged path all
// run in one segment, where y's stand-in carries the first result to the
// second. Ranks must also agree on the order of everything.
TEST_P(DevicePathTest, GroupInCallOrderOnStandInsWithOneHardwareQueue) {
  onOneNativeStream([&](int r, hclComm_t comm, hcl::sim::NativeStream& native, hclStream_t stream) -> int {
    const size_t count = 20000;
    PeerExchange p2p(comm, r);
    void *x = nullptr, *y = nullptr, *z = nullptr, *scalar = nullptr;
    for (void** p : {&x, &y, &z}) {
      if (hclCommMemAlloc(comm, p, count * sizeof(float)) != hclSuccess) return 2;
    }
    if (!p2p.allocate() || hclCommMemAlloc(comm, &scalar, sizeof(float)) != hclSuccess) return 2;
    const float factor = static_cast<float>(r + 1);
    std::vector<float> input(count);
    for (size_t i = 0; i < count; ++i) input[i] = static_cast<float>(r * 1000 + i % 1000);
    native.launch([&] {
      hclCommMemcpy(comm, x, input.data(), count * sizeof(float));
      p2p.writeTag();
      hclCommMemcpy(comm, scalar, &factor, sizeof(float));
    });
    hclRedOp_t premul;
    if (hclRedOpCreatePreMulSum(&premul, scalar, hclFloat, hclScalarDevice, comm) != hclSuccess) return 3;
    if (hclGroupStart() != hclSuccess) return 4;
    if (hclAllReduce(x, y, count, hclFloat, hclSum, comm, stream) != hclSuccess) return 5;
    if (!p2p.post(stream)) return 6;
    if (hclAllReduce(y, z, count, hclFloat, premul, comm, stream) != hclSuccess) return 8;
    if (!groupEnded(comm, r)) return 9;
    std::vector<float> seenY(count, -1.0f), seenZ(count, -1.0f);
    native.launch([&] {
      hclCommMemcpy(comm, seenY.data(), y, count * sizeof(float));
      hclCommMemcpy(comm, seenZ.data(), z, count * sizeof(float));
      p2p.readReceived();
    });
    if (!drained(native, stream, comm, r)) return 10;
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(1000 + 2 * (i % 1000));
      if (seenY[i] != want || seenZ[i] != 3 * want) {
        std::fprintf(stderr, "rank %d element %zu: y %f (want %f), z %f (want %f)\n", r, i, seenY[i], want, seenZ[i],
                     3 * want);
        return 11;
      }
    }
    if (!p2p.receivedPeersTag()) return 12;
    if (hclRedOpDestroy(premul, comm) != hclSuccess) return 13;
    for (void* p : {x, y, z, scalar}) hclCommMemFree(comm, p);
    return 0;
  });
}

// Collectives only, one a pre-multiplied sum whose scalar (r + 1) is in
// device memory, in one group on a native stream with one hardware queue.
// On the staged path they run as their chunk pipelines; the scalar must
// reach HCL's worker through the stream, since a synchronous device copy
// would wait for the stopped stream (the sim device fails such a copy).
TEST_P(DevicePathTest, PreMulSumWithADeviceScalarOnOneHardwareQueue) {
  onOneNativeStream([&](int r, hclComm_t comm, hcl::sim::NativeStream& native, hclStream_t stream) -> int {
    const size_t count = 20000;
    void *x = nullptr, *scaled = nullptr, *plain = nullptr, *scalar = nullptr;
    for (void** p : {&x, &scaled, &plain}) {
      if (hclCommMemAlloc(comm, p, count * sizeof(float)) != hclSuccess) return 2;
    }
    if (hclCommMemAlloc(comm, &scalar, sizeof(float)) != hclSuccess) return 2;
    const float factor = static_cast<float>(r + 1);
    std::vector<float> input(count);
    for (size_t i = 0; i < count; ++i) input[i] = static_cast<float>(r * 1000 + i % 1000);
    native.launch([&] {
      hclCommMemcpy(comm, x, input.data(), count * sizeof(float));
      hclCommMemcpy(comm, scalar, &factor, sizeof(float));
    });
    hclRedOp_t premul;
    if (hclRedOpCreatePreMulSum(&premul, scalar, hclFloat, hclScalarDevice, comm) != hclSuccess) return 3;
    if (hclGroupStart() != hclSuccess) return 4;
    if (hclAllReduce(x, scaled, count, hclFloat, premul, comm, stream) != hclSuccess) return 5;
    if (hclAllReduce(x, plain, count, hclFloat, hclSum, comm, stream) != hclSuccess) return 6;
    if (!groupEnded(comm, r)) return 7;
    std::vector<float> seenScaled(count, -1.0f), seenPlain(count, -1.0f);
    native.launch([&] {
      hclCommMemcpy(comm, seenScaled.data(), scaled, count * sizeof(float));
      hclCommMemcpy(comm, seenPlain.data(), plain, count * sizeof(float));
    });
    if (!drained(native, stream, comm, r)) return 8;
    for (size_t i = 0; i < count; ++i) {
      const float x0 = static_cast<float>(i % 1000), x1 = static_cast<float>(1000 + i % 1000);
      if (seenScaled[i] != x0 + 2 * x1 || seenPlain[i] != x0 + x1) {
        std::fprintf(stderr, "rank %d element %zu: pre-multiplied %f (want %f), sum %f (want %f)\n", r, i,
                     seenScaled[i], x0 + 2 * x1, seenPlain[i], x0 + x1);
        return 9;
      }
    }
    if (hclRedOpDestroy(premul, comm) != hclSuccess) return 10;
    for (void* p : {x, scaled, plain, scalar}) hclCommMemFree(comm, p);
    return 0;
  });
}

// One group over three native streams and two communicators per rank, on a
// device whose streams share one hardware queue: an allreduce on stream 1
// and a send/recv exchange on stream 2 (both on communicator A), and a
// broadcast of communicator B on a third stream. As in NCCL, communicator
// A's launch joins its streams: its copies go on stream 1 (its first call's)
// once stream 2 has written the send buffer, late, before the group, and
// later work on stream 2 sees the allreduce's result. On the old path (one job on HCL's worker copying on its own
// queues while the streams waited) this hung.
TEST_P(DevicePathTest, GroupOverSeveralStreamsAndTwoCommunicators) {
  onOneHardwareQueue(2, [&](int r, const std::vector<hclComm_t>& comms) -> int {
    const size_t count = 30000, p2pCount = 1500;
    hclComm_t a = comms[0], b = comms[1];
    hcl::sim::NativeStream native1(8), native2(8), native3(8);
    hclStream_t a1 = nullptr, a2 = nullptr, b1 = nullptr;
    if (hclCommWrapStream(a, &native1, &a1) != hclSuccess || hclCommWrapStream(a, &native2, &a2) != hclSuccess ||
        hclCommWrapStream(b, &native3, &b1) != hclSuccess) {
      return 1;
    }
    void *sum = nullptr, *bcast = nullptr, *mine = nullptr, *theirs = nullptr;
    if (hclCommMemAlloc(a, &sum, count * sizeof(float)) != hclSuccess ||
        hclCommMemAlloc(b, &bcast, count * sizeof(float)) != hclSuccess ||
        hclCommMemAlloc(a, &mine, p2pCount * sizeof(float)) != hclSuccess ||
        hclCommMemAlloc(a, &theirs, p2pCount * sizeof(float)) != hclSuccess) {
      return 2;
    }
    std::vector<float> input(count), root(count), tag(p2pCount, static_cast<float>(r + 10));
    for (size_t i = 0; i < count; ++i) {
      input[i] = static_cast<float>(r * 100000 + i);
      root[i] = static_cast<float>(r == 1 ? 7 * i : 0);
    }
    native1.launch([&] { hclCommMemcpy(a, sum, input.data(), count * sizeof(float)); });
    native2.launch([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // late: a launch that does not join sends no tag
      hclCommMemcpy(a, mine, tag.data(), p2pCount * sizeof(float));
    });
    native3.launch([&] { hclCommMemcpy(b, bcast, root.data(), count * sizeof(float)); });
    if (hclGroupStart() != hclSuccess) return 3;
    if (hclAllReduce(sum, sum, count, hclFloat, hclSum, a, a1) != hclSuccess) return 4;
    if (hclSend(mine, p2pCount, hclFloat, 1 - r, a, a2) != hclSuccess) return 5;
    if (hclRecv(theirs, p2pCount, hclFloat, 1 - r, a, a2) != hclSuccess) return 6;
    if (hclBcast(bcast, count, hclFloat, 1, b, b1) != hclSuccess) return 7;
    if (!groupEnded(a, r)) return 8;
    std::vector<float> seenSum(count, -1.0f), seenBcast(count, -1.0f), seenP2P(p2pCount, -1.0f);
    native2.launch([&] { hclCommMemcpy(a, seenSum.data(), sum, count * sizeof(float)); });
    native1.launch([&] { hclCommMemcpy(a, seenP2P.data(), theirs, p2pCount * sizeof(float)); });
    native3.launch([&] { hclCommMemcpy(b, seenBcast.data(), bcast, count * sizeof(float)); });
    native1.synchronize();
    native2.synchronize();
    native3.synchronize();
    for (hclStream_t s : {a1, a2, b1}) {
      if (hclStreamSynchronize(s) != hclSuccess) {
        std::fprintf(stderr, "rank %d: %s\n", r, hclGetLastError(a));
        return 9;
      }
    }
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(100000 + 2 * i), wantRoot = static_cast<float>(7 * i);
      if (seenSum[i] != want || seenBcast[i] != wantRoot) {
        std::fprintf(stderr, "rank %d element %zu: allreduce %f (want %f), broadcast %f (want %f)\n", r, i,
                     seenSum[i], want, seenBcast[i], wantRoot);
        return 10;
      }
    }
    if (!receivedPeersTag(seenP2P, r)) return 11;
    for (void* p : {sum, mine, theirs}) hclCommMemFree(a, p);
    hclCommMemFree(b, bcast);
    for (hclStream_t s : {a1, a2, b1}) {
      if (hclStreamDestroy(s) != hclSuccess) return 12;
    }
    return 0;
  });
}

// Two communicators' calls on one native stream in one group: through the
// NCCL API each (communicator, stream) pair gets its own HCL stream, so
// here two HCL streams wrap the one native stream. Each communicator's
// launch goes on the stream in the order of its first call: an allreduce of
// A, then a send/recv exchange and an allreduce of B that reads A's result.
TEST_P(DevicePathTest, TwoCommunicatorsOnOneNativeStreamInOneGroup) {
  onOneHardwareQueue(2, [&](int r, const std::vector<hclComm_t>& comms) -> int {
    const size_t count = 20000;
    hclComm_t a = comms[0], b = comms[1];
    hcl::sim::NativeStream native(8);
    hclStream_t sa = nullptr, sb = nullptr;
    if (hclCommWrapStream(a, &native, &sa) != hclSuccess || hclCommWrapStream(b, &native, &sb) != hclSuccess) {
      return 1;
    }
    PeerExchange p2p(b, r);
    void *x = nullptr, *y = nullptr, *z = nullptr;
    for (void** p : {&x, &y, &z}) {
      if (hclCommMemAlloc(a, p, count * sizeof(float)) != hclSuccess) return 2;
    }
    if (!p2p.allocate()) return 2;
    std::vector<float> input(count);
    for (size_t i = 0; i < count; ++i) input[i] = static_cast<float>(r * 1000 + i % 1000);
    native.launch([&] {
      hclCommMemcpy(a, x, input.data(), count * sizeof(float));
      p2p.writeTag();
    });
    if (hclGroupStart() != hclSuccess) return 3;
    if (hclAllReduce(x, y, count, hclFloat, hclSum, a, sa) != hclSuccess) return 4;
    if (!p2p.post(sb)) return 5;
    if (hclAllReduce(y, z, count, hclFloat, hclMax, b, sb) != hclSuccess) return 6;
    if (!groupEnded(a, r)) return 7;
    std::vector<float> seenZ(count, -1.0f);
    native.launch([&] {
      hclCommMemcpy(a, seenZ.data(), z, count * sizeof(float));
      p2p.readReceived();
    });
    if (!drained(native, sa, a, r) || !drained(native, sb, b, r)) return 8;
    for (size_t i = 0; i < count; ++i) {
      const float want = static_cast<float>(1000 + 2 * (i % 1000));
      if (seenZ[i] != want) {
        std::fprintf(stderr, "rank %d element %zu: z %f (want %f)\n", r, i, seenZ[i], want);
        return 9;
      }
    }
    if (!p2p.receivedPeersTag()) return 10;
    for (void* p : {x, y, z}) hclCommMemFree(a, p);
    return hclStreamDestroy(sa) == hclSuccess && hclStreamDestroy(sb) == hclSuccess ? 0 : 11;
  });
}

// One thread drives both ranks of a communicator, their calls on one HCL
// stream in one group: an allreduce and a send/recv exchange per rank. The
// ranks' operations must run at once, so this launch stays one job on HCL's
// worker (launched one communicator after the other, it would wait for
// itself until the timeout).
TEST_P(DevicePathTest, OneThreadDrivesBothRanksOnOneStream) {
  setenv("HCL_TIMEOUT_MS", "10000", 1);
  auto comms = initOnPath({"sim:0", "sim:0"});
  unsetenv("HCL_TIMEOUT_MS");
  const size_t count = 4096;
  hcl::sim::NativeStream native;
  hclStream_t stream = nullptr;
  ASSERT_EQ(hclCommWrapStream(comms[0], &native, &stream), hclSuccess);
  std::vector<void*> in(2), sum(2), mine(2), theirs(2);
  for (int r = 0; r < 2; ++r) {
    hclComm_t c = comms[static_cast<size_t>(r)];
    for (auto* v : {&in, &sum, &mine, &theirs}) {
      ASSERT_EQ(hclCommMemAlloc(c, &(*v)[static_cast<size_t>(r)], count * sizeof(float)), hclSuccess);
    }
    std::vector<float> values(count, static_cast<float>(r + 1)), tag(count, static_cast<float>(r + 10));
    ASSERT_EQ(hclCommMemcpy(c, in[static_cast<size_t>(r)], values.data(), count * sizeof(float)), hclSuccess);
    ASSERT_EQ(hclCommMemcpy(c, mine[static_cast<size_t>(r)], tag.data(), count * sizeof(float)), hclSuccess);
  }
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < 2; ++r) {
    const int peer = 1 - static_cast<int>(r);
    ASSERT_EQ(hclAllReduce(in[r], sum[r], count, hclFloat, hclSum, comms[r], stream), hclSuccess);
    ASSERT_EQ(hclSend(mine[r], count, hclFloat, peer, comms[r], stream), hclSuccess);
    ASSERT_EQ(hclRecv(theirs[r], count, hclFloat, peer, comms[r], stream), hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(comms[0]);
  native.synchronize();
  ASSERT_EQ(hclStreamSynchronize(stream), hclSuccess) << hclGetLastError(comms[0]);
  for (size_t r = 0; r < 2; ++r) {
    std::vector<float> seenSum(count), seenTheirs(count);
    ASSERT_EQ(hclCommMemcpy(comms[r], seenSum.data(), sum[r], count * sizeof(float)), hclSuccess);
    ASSERT_EQ(hclCommMemcpy(comms[r], seenTheirs.data(), theirs[r], count * sizeof(float)), hclSuccess);
    EXPECT_EQ(seenSum, std::vector<float>(count, 3.0f)) << "rank " << r;
    EXPECT_TRUE(receivedPeersTag(seenTheirs, static_cast<int>(r)));
    for (auto* v : {&in, &sum, &mine, &theirs}) hclCommMemFree(comms[r], (*v)[r]);
  }
  EXPECT_EQ(hclStreamDestroy(stream), hclSuccess);
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// Sim ranks of one host map each other's memory: every collective runs on
// the devices (plan "ipc"), with device buffers and with host buffers (which
// get device stand-ins), whichever sim device each rank is on.
TEST_F(DeviceTest, SimRanksOfOneHostShareMemoryByIpc) {
  const std::vector<std::string> devices{"sim:0", "sim:1", "sim:0"};
  auto comms = initOnDevices(devices);
  for (hclComm_t c : comms) {
    hclPlanInfo_t plan;
    ASSERT_EQ(hclCommGetPlan(c, "alltoall", 1 << 20, &plan), hclSuccess);
    EXPECT_STREQ(plan.algorithm, "ipc");
    EXPECT_STREQ(plan.linkClasses, "ipc:sim");
  }
  for (bool device : {true, false}) {
    hcltest::CheckConfig cfg;
    cfg.counts = {0, 1, 7, 3001};
    cfg.bigCounts = {40000};
    cfg.deviceMemory = device;
    auto rc = onThreads(3, [&](int r) { return hcltest::checkAllCollectives(comms[static_cast<size_t>(r)], cfg); });
    EXPECT_EQ(rc, std::vector<int>(3, 0)) << (device ? "device buffers" : "host buffers");
  }
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// The same with ranks as processes: each maps its peers' allocations
// (pidfd_getfd of the sim's memfds, where CUDA would use cudaIpcOpenMemHandle).
// The handshakes go over shared memory, or TCP with HCL_SHM_DISABLE.
TEST_F(DeviceTest, IpcBetweenRanksAsProcesses) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan cannot follow threads started after fork in a multi-threaded process";
#endif
  std::string whyNot;
  if (!hcl::sim::canOpenPeerHandles(&whyNot)) GTEST_SKIP() << "sim IPC between processes is not allowed here: " << whyNot;
  for (bool tcp : {false, true}) {
    hcltest::EnvList env = hcltest::rank0RootEnv("60000");
    if (tcp) env.push_back({"HCL_SHM_DISABLE", "1"});
    auto results = hcltest::runProcesses(
        3,
        [&](int rank) {
          RANK_HCL(hclSetDevice(rank == 1 ? "sim:1" : "sim:0"));
          hclUniqueId id;
          RANK_HCL(hclGetUniqueId(&id));
          hclComm_t comm = nullptr;
          RANK_HCL(hclCommInitRank(&comm, 3, id, rank));
          hclPlanInfo_t plan;
          RANK_HCL(hclCommGetPlan(comm, "allreduce", 4096, &plan));
          RANK_CHECK(std::string(plan.algorithm) == "ipc", "rank %d plans %s, want ipc", rank, plan.algorithm);
          return checkAllAndDestroy(comm, true);
        },
        300, env);
    EXPECT_EQ(hcltest::describeFailures(results), "") << (tcp ? "tcp" : "shm");
  }
}

// A rank that dies between calls: the survivors' next IPC call fails within
// the timeout instead of waiting for its handshake forever.
TEST_F(DeviceTest, IpcCallFailsWhenAPeerDies) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan cannot follow threads started after fork in a multi-threaded process";
#endif
  std::string whyNot;
  if (!hcl::sim::canOpenPeerHandles(&whyNot)) GTEST_SKIP() << "sim IPC between processes is not allowed here: " << whyNot;
  const hcltest::EnvList env = hcltest::rank0RootEnv("3000");
  auto results = hcltest::runProcesses(
      3,
      [&](int rank) {
        RANK_HCL(hclSetDevice("sim:0"));
        hclUniqueId id;
        RANK_HCL(hclGetUniqueId(&id));
        hclComm_t comm = nullptr;
        RANK_HCL(hclCommInitRank(&comm, 3, id, rank));
        void* buf = nullptr;
        RANK_HCL(hclCommMemAlloc(comm, &buf, 4096 * sizeof(float)));
        RANK_HCL(hclAllReduce(buf, buf, 4096, hclFloat, hclSum, comm, nullptr));
        if (rank == 2) _exit(0);  // gone without a word
        const hclResult_t r = hclAllReduce(buf, buf, 4096, hclFloat, hclSum, comm, nullptr);
        RANK_CHECK(r != hclSuccess, "rank %d: allreduce with a dead peer succeeded", rank);
        const std::string text = hclGetLastError(comm);
        RANK_CHECK(text.find("hclAllReduce") != std::string::npos, "rank %d: error text '%s' does not name the call",
                   rank, text.c_str());
        hclCommAbort(comm);
        return 0;
      },
      60, env);
  EXPECT_EQ(hcltest::describeFailures(results), "");
}

TEST(DeviceChoice, BadDeviceTextNamesCallAndValue) {
  EXPECT_EQ(hclSetDevice("gpu7"), hclInvalidArgument);
  const std::string e = hclGetLastError(nullptr);
  EXPECT_NE(e.find("hclSetDevice"), std::string::npos) << e;
  EXPECT_NE(e.find("gpu7"), std::string::npos) << e;
  EXPECT_EQ(hclSetDevice("sim:9"), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("sim device 9"), std::string::npos);
  EXPECT_EQ(hclSetDevice(nullptr), hclInvalidArgument);
  // Spaces around the text, as a shell or config file may leave them.
  EXPECT_EQ(hclSetDevice(" sim:9\n"), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("sim device 9"), std::string::npos) << hclGetLastError(nullptr);
  EXPECT_EQ(hclSetDevice(" auto "), hclSuccess) << hclGetLastError(nullptr);
}

// Without a CUDA driver (this is how CI machines look) choosing CUDA fails
// with a clear error, and the CPU device still works in the same process.
TEST(DeviceChoice, CudaWithoutDriverFailsClearlyAndCpuStillWorks) {
  const hclResult_t r = hclSetDevice("cuda");
  if (r == hclSuccess) GTEST_SKIP() << "a CUDA driver and device are present; the fallback is not exercised";
  const std::string e = hclGetLastError(nullptr);
  EXPECT_NE(e.find("hclSetDevice"), std::string::npos) << e;
  EXPECT_TRUE(e.find("driver") != std::string::npos || e.find("plugin") != std::string::npos ||
              e.find("device") != std::string::npos)
      << e;
  std::printf("cuda unavailable: %s\n", e.c_str());
  ASSERT_EQ(hclSetDevice("auto"), hclSuccess);
  hclComm_t comm = nullptr;
  ASSERT_EQ(hclCommInitAll(&comm, 1, nullptr), hclSuccess) << hclGetLastError(nullptr);
  char name[32];
  ASSERT_EQ(hclCommGetDevice(comm, name, sizeof name), hclSuccess);
  EXPECT_STREQ(name, "cpu");
  float x = 2.0f, y = 0.0f;
  EXPECT_EQ(hclAllReduce(&x, &y, 1, hclFloat, hclSum, comm, nullptr), hclSuccess);
  EXPECT_EQ(y, 2.0f);
  EXPECT_EQ(hclCommDestroy(comm), hclSuccess);
}

}  // namespace
