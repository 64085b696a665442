// Nonblocking communicators (config.blocking = 0, as NCCL's): an init
// returns hclInProgress at once and finishes in the background, the
// communicator refuses use until hclCommGetAsyncError says it is ready, and
// hclCommAbort stops an init that waits for peers that never come.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "hcl.h"

namespace {

using namespace std::chrono_literals;

std::string lastError(hclComm_t comm) { return hclGetLastError(comm); }

hclConfig_t nonblockingConfig() {
  hclConfig_t config = HCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Polls the communicator's state until it is no longer hclInProgress, for
// at most `limit` (a guard against a hang, not a speed check).
hclResult_t waitForInit(hclComm_t comm, std::chrono::seconds limit = 60s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  hclResult_t state = hclInProgress;
  while (std::chrono::steady_clock::now() < end) {
    if (hclCommGetAsyncError(comm, &state) != hclSuccess) return hclInternalError;
    if (state != hclInProgress) return state;
    std::this_thread::sleep_for(1ms);
  }
  return hclInProgress;
}

// A nonblocking init of rank 0 of `nranks`, whose other ranks never come.
hclComm_t startLonelyRank(int nranks) {
  hclUniqueId id;
  if (hclGetUniqueId(&id) != hclSuccess) return nullptr;
  hclConfig_t config = nonblockingConfig();
  hclComm_t comm = nullptr;
  if (hclCommInitRankConfig(&comm, nranks, id, 0, &config) != hclInProgress) return nullptr;
  return comm;
}

// Once another thread has published the communicator it creates in a
// group, tries to destroy it until the answer is no longer hclInvalidUsage
// (the group still open): hclInvalidArgument says its init now runs.
hclResult_t destroyUntilTheInitRuns(const std::atomic<hclComm_t>& comm) {
  const auto end = std::chrono::steady_clock::now() + 60s;
  hclResult_t destroyed = hclInvalidUsage;
  while (destroyed == hclInvalidUsage && std::chrono::steady_clock::now() < end) {
    if (comm.load() != nullptr) destroyed = hclCommDestroy(comm.load());
    std::this_thread::sleep_for(1ms);
  }
  return destroyed;
}

class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvGuard() { unsetenv(name_); }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  const char* name_;
};

// With nonblocking inits one thread can create every rank of a
// communicator without a group: each init returns before its peers join.
TEST(Nonblocking, OneThreadCreatesBothRanksThenReducesOverThem) {
  hclUniqueId id;
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  hclConfig_t config = nonblockingConfig();
  hclComm_t comms[2] = {nullptr, nullptr};
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(hclCommInitRankConfig(&comms[r], 2, id, r, &config), hclInProgress) << lastError(nullptr);
    ASSERT_NE(comms[r], nullptr);
  }
  for (hclComm_t c : comms) ASSERT_EQ(waitForInit(c), hclSuccess) << lastError(c);

  int count = 0, rank = -1;
  EXPECT_EQ(hclCommCount(comms[1], &count), hclSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(hclCommUserRank(comms[1], &rank), hclSuccess);
  EXPECT_EQ(rank, 1);

  std::vector<float> data[2] = {std::vector<float>(1000, 1.5f), std::vector<float>(1000, 2.0f)};
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(hclAllReduce(data[r].data(), data[r].data(), data[r].size(), hclFloat32, hclSum, comms[r], nullptr),
              hclSuccess)
        << lastError(comms[r]);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << lastError(nullptr);
  for (const auto& d : data) {
    for (float v : d) ASSERT_EQ(v, 3.5f);
  }
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess) << lastError(c);
}

// Until its init is done the communicator reports hclInProgress and refuses
// every other call with hclInvalidArgument (as NCCL's), destroy included;
// once its peer has joined it works.
TEST(Nonblocking, CommunicatorRefusesUseUntilItsInitIsDone) {
  hclUniqueId id;
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  hclConfig_t config = nonblockingConfig();
  hclComm_t first = nullptr;
  ASSERT_EQ(hclCommInitRankConfig(&first, 2, id, 0, &config), hclInProgress) << lastError(nullptr);
  hclResult_t state = hclSuccess;
  ASSERT_EQ(hclCommGetAsyncError(first, &state), hclSuccess);
  EXPECT_EQ(state, hclInProgress);  // rank 1 has not called yet

  int count = 0;
  EXPECT_EQ(hclCommCount(first, &count), hclInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("hclCommCount: comm is still initializing (wait until hclCommGetAsyncError"),
            std::string::npos)
      << lastError(nullptr);
  float x = 1.0f;
  EXPECT_EQ(hclAllReduce(&x, &x, 1, hclFloat32, hclSum, first, nullptr), hclInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("still initializing"), std::string::npos) << lastError(nullptr);
  EXPECT_EQ(hclCommFinalize(first), hclInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("hclCommFinalize: comm"), std::string::npos) << lastError(nullptr);
  EXPECT_EQ(hclCommDestroy(first), hclInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("is still initializing: wait until hclCommGetAsyncError no longer gives "
                                    "hclInProgress, or stop the init with hclCommAbort"),
            std::string::npos)
      << lastError(nullptr);

  hclComm_t second = nullptr;
  ASSERT_EQ(hclCommInitRankConfig(&second, 2, id, 1, &config), hclInProgress) << lastError(nullptr);
  ASSERT_EQ(waitForInit(first), hclSuccess) << lastError(first);
  ASSERT_EQ(waitForInit(second), hclSuccess) << lastError(second);
  EXPECT_EQ(hclCommCount(first, &count), hclSuccess) << lastError(first);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(hclCommDestroy(first), hclSuccess);
  EXPECT_EQ(hclCommDestroy(second), hclSuccess);
}

// HCL_COMM_BLOCKING=0 (or NCCL_COMM_BLOCKING) makes inits nonblocking where
// the config does not say; a config's blocking = 1 wins over it.
TEST(Nonblocking, EnvironmentChoosesWhereTheConfigIsSilent) {
  hclUniqueId id;
  hclComm_t comm = nullptr;
  for (const char* name : {"HCL_COMM_BLOCKING", "NCCL_COMM_BLOCKING"}) {
    EnvGuard env(name, "0");
    ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
    ASSERT_EQ(hclCommInitRank(&comm, 1, id, 0), hclInProgress) << name << ": " << lastError(nullptr);
    ASSERT_EQ(waitForInit(comm), hclSuccess) << lastError(comm);
    EXPECT_EQ(hclCommDestroy(comm), hclSuccess);
  }

  EnvGuard env("HCL_COMM_BLOCKING", "0");
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  hclConfig_t config = HCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  ASSERT_EQ(hclCommInitRankConfig(&comm, 1, id, 0, &config), hclSuccess) << lastError(nullptr);
  EXPECT_EQ(hclCommDestroy(comm), hclSuccess);
}

// A failed nonblocking init: hclCommGetAsyncError gives its error code,
// hclGetLastError(comm) its text, and the handle can be destroyed.
TEST(Nonblocking, FailedInitReportsItsErrorOnTheCommunicator) {
  EnvGuard timeout("HCL_TIMEOUT_MS", "300");
  hclComm_t comm = startLonelyRank(2);
  ASSERT_NE(comm, nullptr) << lastError(nullptr);
  const hclResult_t state = waitForInit(comm);
  EXPECT_NE(state, hclInProgress);
  EXPECT_NE(state, hclSuccess);
  EXPECT_NE(lastError(comm).find("hclCommInitRankConfig"), std::string::npos) << lastError(comm);
  int count = 0;
  EXPECT_EQ(hclCommCount(comm, &count), state);
  EXPECT_EQ(hclCommFinalize(comm), state);
  EXPECT_NE(lastError(nullptr).find("hclCommFinalize: comm failed to initialize"), std::string::npos)
      << lastError(nullptr);
  EXPECT_EQ(hclCommDestroy(comm), hclSuccess);
}

// hclCommAbort stops an init that waits for a peer that never comes, long
// before the timeout; the handle is gone afterwards.
TEST(Nonblocking, AbortStopsAnInitWaitingForItsPeers) {
  EnvGuard timeout("HCL_TIMEOUT_MS", "600000");
  hclComm_t comm = startLonelyRank(3);
  ASSERT_NE(comm, nullptr) << lastError(nullptr);
  std::this_thread::sleep_for(50ms);  // let it reach the wait for its peers
  auto aborted = std::async(std::launch::async, [comm] { return hclCommAbort(comm); });
  ASSERT_EQ(aborted.wait_for(120s), std::future_status::ready) << "hclCommAbort waited for the init's timeout";
  EXPECT_EQ(aborted.get(), hclSuccess);
  hclResult_t state = hclSuccess;
  EXPECT_EQ(hclCommGetAsyncError(comm, &state), hclInvalidArgument);  // freed
}

// An init that runs at another thread's hclGroupEnd can be aborted too,
// blocking or not (inside a group both run at hclGroupEnd): that
// hclGroupEnd then returns the init's error instead of waiting out the
// timeout.
void abortGroupsInitOnAnotherThread(int blocking) {
  EnvGuard timeout("HCL_TIMEOUT_MS", "600000");
  hclUniqueId id;
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  std::atomic<hclComm_t> comm{nullptr};
  struct Ended {
    hclResult_t result = hclSuccess;
    std::string text;
  };
  auto ended = std::async(std::launch::async, [&] {
    hclComm_t c = nullptr;
    hclConfig_t config = HCL_CONFIG_INITIALIZER;
    config.blocking = blocking;
    if (hclGroupStart() != hclSuccess) return Ended{hclSuccess, "hclGroupStart failed"};
    if (hclCommInitRankConfig(&c, 2, id, 0, &config) != hclSuccess) return Ended{hclSuccess, "init failed"};
    comm.store(c);  // rank 1 never comes
    const hclResult_t r = hclGroupEnd();
    return Ended{r, lastError(nullptr)};
  });
  ASSERT_EQ(destroyUntilTheInitRuns(comm), hclInvalidArgument) << lastError(nullptr);
  EXPECT_EQ(hclCommAbort(comm.load()), hclSuccess) << lastError(nullptr);
  ASSERT_EQ(ended.wait_for(120s), std::future_status::ready) << "hclGroupEnd waited for the init's timeout";
  const Ended result = ended.get();
  EXPECT_NE(result.result, hclSuccess) << result.text;
  EXPECT_NE(result.text.find("hclCommInitRankConfig: bootstrap rank 0 of 2: bootstrap aborted"), std::string::npos)
      << result.text;
}

TEST(Nonblocking, AbortStopsABlockingGroupInitRunningOnAnotherThread) { abortGroupsInitOnAnotherThread(1); }

TEST(Nonblocking, AbortStopsANonblockingGroupInitRunningOnAnotherThread) { abortGroupsInitOnAnotherThread(0); }

// A blocking init hands out its handle (*comm) before it runs. A watchdog
// thread that reads it there may abort the init, which stops it at once;
// destroying it meanwhile is refused instead of freeing it under the init.
TEST(Nonblocking, WatchdogAbortStopsABlockingInitOnAnotherThread) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the watchdog reads the handle that the init writes with no synchronization (as a real one "
                  "would), which TSan reports as a race";
#else
  EnvGuard timeout("HCL_TIMEOUT_MS", "600000");
  hclUniqueId id;
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  hclComm_t written = nullptr;
  struct Ended {
    hclResult_t result = hclSuccess;
    std::string text;
  };
  auto ended = std::async(std::launch::async, [&] {
    const hclResult_t r = hclCommInitRank(&written, 2, id, 0);  // rank 1 never comes
    return Ended{r, lastError(nullptr)};
  });
  hclComm_t comm = nullptr;
  for (int i = 0; i < 60000 && !comm; ++i) {
    comm = std::atomic_ref<hclComm_t>(written).load();
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_NE(comm, nullptr) << "the init never handed out its handle";
  EXPECT_EQ(hclCommDestroy(comm), hclInvalidArgument);
  EXPECT_NE(lastError(nullptr).find("still initializing"), std::string::npos) << lastError(nullptr);
  EXPECT_EQ(hclCommAbort(comm), hclSuccess) << lastError(nullptr);
  ASSERT_EQ(ended.wait_for(120s), std::future_status::ready) << "the init waited for its timeout";
  const Ended result = ended.get();
  EXPECT_NE(result.result, hclSuccess) << result.text;
  EXPECT_NE(result.text.find("hclCommInitRank: bootstrap rank 0 of 2: bootstrap aborted"), std::string::npos)
      << result.text;
  EXPECT_EQ(written, nullptr);
#endif
}

// A split exchanges over its parent's links and cannot be stopped: aborting
// the child it is making is refused, and the split ends at the timeout.
TEST(Nonblocking, AbortOfAChildBeingSplitIsRefused) {
  EnvGuard timeout("HCL_TIMEOUT_MS", "1500");
  hclComm_t parents[2] = {nullptr, nullptr};
  ASSERT_EQ(hclCommInitAll(parents, 2, nullptr), hclSuccess) << lastError(nullptr);
  std::atomic<hclComm_t> child{nullptr};
  auto ended = std::async(std::launch::async, [&] {
    hclComm_t c = nullptr;
    if (hclGroupStart() != hclSuccess) return hclInternalError;
    if (hclCommSplit(parents[0], 0, 0, &c, nullptr) != hclSuccess) return hclInternalError;
    child.store(c);  // rank 1 of the parent never splits
    return hclGroupEnd();
  });
  ASSERT_EQ(destroyUntilTheInitRuns(child), hclInvalidArgument) << lastError(nullptr);
  EXPECT_EQ(hclCommAbort(child.load()), hclInvalidUsage);
  EXPECT_NE(lastError(nullptr).find("is being made by a split or shrink at hclGroupEnd, which cannot be stopped"),
            std::string::npos)
      << lastError(nullptr);
  ASSERT_EQ(ended.wait_for(120s), std::future_status::ready);
  EXPECT_NE(ended.get(), hclSuccess);
  EXPECT_EQ(hclCommDestroy(child.load()), hclSuccess) << lastError(nullptr);
  for (hclComm_t p : parents) EXPECT_EQ(hclCommAbort(p), hclSuccess);
}

}  // namespace
