// HCL's libnccl.so.2 through the NCCL API: versions, error texts, the
// functions that report "not supported", older config structs, groups over
// several communicators, the device API's team queries and pointer routing.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "plugins/nccl/device_api.h"

namespace {

std::string lastError(ncclComm_t comm = nullptr) { return ncclGetLastError(comm); }

// Communicators of one process, destroyed at the end of the test.
struct LocalComms {
  explicit LocalComms(int n) : comms(static_cast<size_t>(n), nullptr) {
    EXPECT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess) << lastError();
  }
  ~LocalComms() {
    for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
  std::vector<ncclComm_t> comms;
};

TEST(NcclLibrary, VersionIsTheNcclVersionHclMatches) {
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22809);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_EQ(ncclGetVersion(nullptr), ncclInvalidArgument);
  EXPECT_NE(lastError().find("ncclGetVersion"), std::string::npos) << lastError();
}

TEST(NcclLibrary, EveryResultHasItsOwnText) {
  std::vector<std::string> texts;
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* text = ncclGetErrorString(static_cast<ncclResult_t>(r));
    ASSERT_NE(text, nullptr) << r;
    ASSERT_GT(std::strlen(text), 0u) << r;
    for (const auto& other : texts) EXPECT_NE(other, text) << r;
    texts.emplace_back(text);
  }
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_NE(texts[ncclInvalidArgument].find("invalid argument"), std::string::npos);
  EXPECT_NE(texts[ncclInvalidUsage].find("NCCL_DEBUG"), std::string::npos);
  EXPECT_NE(texts[ncclRemoteError].find("remote"), std::string::npos);
  EXPECT_NE(texts[ncclInProgress].find("in progress"), std::string::npos);
  EXPECT_STREQ(ncclGetErrorString(ncclNumResults), "unknown result code");
  EXPECT_STREQ(pncclGetErrorString(ncclSystemError), ncclGetErrorString(ncclSystemError));
}

TEST(NcclLibrary, LastErrorNamesTheNcclCall) {
  LocalComms local(1);
  ncclComm_t comm = local.comms[0];
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidArgument);
  for (const std::string& text : {lastError(comm), lastError()}) {
    EXPECT_EQ(text.rfind("ncclAllReduce: ", 0), 0u) << text;
    EXPECT_NE(text.find("sendbuff"), std::string::npos) << text;
  }
  float buf[4] = {};
  EXPECT_EQ(ncclBroadcast(buf, buf, 4, ncclFloat, 3, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(lastError(comm).rfind("ncclBroadcast: root 3", 0), 0u) << lastError(comm);
  EXPECT_EQ(ncclAllReduce(buf, buf, 4, static_cast<ncclDataType_t>(42), ncclSum, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(lastError(comm).find("hcl"), std::string::npos) << lastError(comm);
  EXPECT_EQ(ncclCommCount(nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(lastError().rfind("ncclCommCount: ", 0), 0u) << lastError();
}

// Makes the library re-read NCCL_DEBUG*: deprecated in NCCL, still exported,
// and the only way to change the log settings of a running process.
void rereadDebugSettings() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
}

// What the library logs while fn() runs, at NCCL_DEBUG=`level` with the
// default subsystems unless `subsys` names some.
template <typename Fn>
std::string logOf(const char* level, const char* subsys, Fn&& fn) {
  char path[] = "/tmp/hcl_nccl_log_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  if (fd < 0) return {};
  close(fd);
  setenv("NCCL_DEBUG", level, 1);
  setenv("NCCL_DEBUG_FILE", path, 1);
  if (subsys) setenv("NCCL_DEBUG_SUBSYS", subsys, 1);
  rereadDebugSettings();
  fn();
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_FILE");
  unsetenv("NCCL_DEBUG_SUBSYS");
  rereadDebugSettings();
  std::ifstream in(path);
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);
  return log;
}

TEST(NcclLibrary, LogLinesNameTheNcclCall) {
  const std::string log = logOf("INFO", "ALL", [] {
    LocalComms local(1);
    float buf[4] = {};
    EXPECT_EQ(ncclSend(buf, 4, ncclFloat, 5, local.comms[0], nullptr), ncclInvalidArgument);
  });
  EXPECT_NE(log.find("ncclSend: peer 5"), std::string::npos) << log;
  EXPECT_EQ(log.find("hclSend"), std::string::npos) << log;
  EXPECT_NE(log.find(" HCL INFO "), std::string::npos) << "the library still says who it is:\n" << log;
}

// ncclGetErrorString sends the reader to NCCL_DEBUG=WARN for the details.
TEST(NcclLibrary, ArgumentErrorsAreWarnings) {
  const std::string log = logOf("WARN", nullptr, [] {
    LocalComms local(1);
    float buf[4] = {};
    EXPECT_EQ(ncclSend(buf, 4, ncclFloat, 5, local.comms[0], nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclBcast(nullptr, 4, ncclFloat, 0, local.comms[0], nullptr), ncclInvalidArgument);
  });
  EXPECT_NE(log.find(" HCL WARN CALL ncclSend: peer 5 is out of range"), std::string::npos) << log;
  EXPECT_NE(log.find(" HCL WARN CALL ncclBcast: buff is NULL with count 4"), std::string::npos) << log;
  EXPECT_NE(std::string(ncclGetErrorString(ncclInvalidArgument)).find("NCCL_DEBUG=WARN"), std::string::npos);
}

// The drop-in asks where a communicator computes before each call; that
// question records no error and logs nothing of its own, whatever state
// the communicator is in.
TEST(NcclLibrary, CallsOnAFailedCommunicatorReportTheirOwnError) {
  LocalComms local(2);
  ASSERT_EQ(ncclCommAbort(local.comms[1]), ncclSuccess);
  local.comms[1] = nullptr;
  float x[4] = {1, 2, 3, 4};
  const std::string log = logOf("WARN", nullptr, [&] {
    EXPECT_EQ(ncclAllReduce(x, x, 4, ncclFloat, ncclSum, local.comms[0], nullptr), ncclRemoteError);
    EXPECT_EQ(ncclAllReduce(x, x, 4, ncclFloat, ncclSum, local.comms[0], nullptr), ncclRemoteError);
  });
  EXPECT_NE(log.find("ncclAllReduce: communicator has failed"), std::string::npos) << log;
  EXPECT_EQ(log.find("GetDevice"), std::string::npos) << log;
  EXPECT_EQ(std::string(lastError(local.comms[0])).rfind("ncclAllReduce: communicator has failed", 0), 0u)
      << lastError(local.comms[0]);
}

// As docs/errors.md: after ncclCommFinalize only queries, deregistration and
// destroy; a finalized CPU communicator refuses device-looking work with
// that reason, not a memory one.
TEST(NcclLibrary, AFinalizedCommunicatorTakesQueriesAndDeregistrationOnly) {
  LocalComms local(1);
  ncclComm_t comm = local.comms[0];
  std::vector<float> data(16, 1.0f);
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(comm, data.data(), data.size() * sizeof(float), &handle), ncclSuccess) << lastError();
  ASSERT_EQ(ncclCommFinalize(comm), ncclSuccess) << lastError();
  const std::string finalized = "comm was finalized (ncclCommFinalize)";
  void* another = nullptr;
  EXPECT_EQ(ncclCommRegister(comm, data.data(), 64, &another), ncclInvalidUsage);
  EXPECT_EQ(lastError(comm).rfind("ncclCommRegister: " + finalized, 0), 0u) << lastError(comm);
  EXPECT_EQ(another, nullptr);
  ncclRedOp_t op{};
  float scalar = 2.0f;
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comm), ncclInvalidUsage);
  EXPECT_EQ(lastError(comm).rfind("ncclRedOpCreatePreMulSum: " + finalized, 0), 0u) << lastError(comm);
  EXPECT_EQ(ncclAllReduce(data.data(), data.data(), 16, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage);
  EXPECT_EQ(lastError(comm).rfind("ncclAllReduce: " + finalized, 0), 0u) << lastError(comm);
  int count = 0;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess) << lastError(comm);
}

// NCCL sets *newcomm to NULL before it reads the config, so a refused config
// leaves NULL there.
TEST(NcclLibrary, SplitAndShrinkRefusingTheirConfigLeaveNull) {
  LocalComms local(2);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.blocking = 7;
  auto* marker = reinterpret_cast<ncclComm_t>(&bad);
  ncclComm_t out = marker;
  EXPECT_EQ(ncclCommSplit(local.comms[0], 0, 0, &out, &bad), ncclInvalidArgument);
  EXPECT_EQ(out, nullptr);
  out = marker;
  int gone[] = {1};
  EXPECT_EQ(ncclCommShrink(local.comms[0], gone, 1, &out, &bad, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(out, nullptr);
  ncclConfig_t unset{};  // not from NCCL_CONFIG_INITIALIZER: refused by the ABI layer
  out = marker;
  EXPECT_EQ(ncclCommSplit(local.comms[0], 0, 0, &out, &unset), ncclInvalidArgument);
  EXPECT_EQ(out, nullptr);
}

void expectNotSupported(ncclResult_t r, const char* call) {
  EXPECT_EQ(r, ncclInvalidUsage) << call;
  const std::string text = lastError();
  EXPECT_EQ(text.rfind(std::string(call) + ":", 0), 0u) << text;
  EXPECT_NE(text.find("not supported"), std::string::npos) << text;
}

TEST(NcclLibrary, UnimplementedFunctionsSayNotSupported) {
  LocalComms local(1);
  ncclComm_t comm = local.comms[0];
  ncclComm_t shrunk = comm;
  int exclude[] = {0};
  EXPECT_EQ(ncclCommShrink(comm, exclude, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(lastError(), "ncclCommShrink: excludeRanksCount: a communicator of 1 rank has no other rank to exclude");
  EXPECT_EQ(shrunk, comm) << "a shrink refused for its list leaves *newcomm alone, as NCCL's";
  EXPECT_EQ(ncclCommShrink(comm, nullptr, 0, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(lastError(), "ncclCommShrink: excludeRanksList is NULL (excludeRanksCount 0)");
  EXPECT_EQ(shrunk, comm);
  expectNotSupported(ncclDevCommCreate(comm, nullptr, nullptr), "ncclDevCommCreate");
  expectNotSupported(pncclDevCommDestroy(comm, nullptr), "ncclDevCommDestroy");
  expectNotSupported(ncclLsaBarrierCreateRequirement(ncclTeamWorld(comm), 1, nullptr, nullptr),
                     "ncclLsaBarrierCreateRequirement");
  expectNotSupported(ncclGinBarrierCreateRequirement(comm, ncclTeamWorld(comm), 1, nullptr, nullptr),
                     "ncclGinBarrierCreateRequirement");
  expectNotSupported(ncclLLA2ACreateRequirement(1, 1, nullptr, nullptr), "ncclLLA2ACreateRequirement");
  // Sizing is arithmetic, as NCCL's, even though the resource is not supported.
  EXPECT_EQ(ncclLLA2ACalcSlots(64, 8), 64);
  EXPECT_EQ(ncclLLA2ACalcSlots(4, 100), 52);
  EXPECT_EQ(ncclLLA2ACalcSlots(3, 16), 6);
  // The communicator is untouched by all of this.
  float x = 2.0f;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr), ncclSuccess) << lastError(comm);
  EXPECT_EQ(x, 2.0f);
}

// Through the drop-in, with NCCL 2.28's rules: new work and finalize are
// refused after a revoke; shrink and destroy still work.
// Windows are collective: inside a group the caller's handle is filled at
// ncclGroupEnd, which one thread uses to register for both ranks.
TEST(NcclLibrary, WindowsRegisterInAGroupAndDeregisterOnce) {
  LocalComms local(2);
  std::vector<std::vector<float>> data(2, std::vector<float>(1024, 1.5f));
  ncclWindow_t win[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclCommWindowRegister(local.comms[r], data[r].data(), data[r].size() * sizeof(float), &win[r],
                                     NCCL_WIN_COLL_SYMMETRIC),
              ncclSuccess)
        << lastError();
  }
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), data[r].size(), ncclFloat, ncclSum, local.comms[r], nullptr),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << lastError();
  EXPECT_NE(win[0], nullptr);
  EXPECT_NE(win[1], nullptr);
  EXPECT_EQ(data[1][1023], 3.0f);
  for (size_t r = 0; r < 2; ++r) EXPECT_EQ(ncclCommWindowDeregister(local.comms[r], win[r]), ncclSuccess) << lastError();
  EXPECT_EQ(ncclCommWindowDeregister(local.comms[0], win[0]), ncclInvalidUsage);
  EXPECT_EQ(lastError().rfind("ncclCommWindowDeregister: win ", 0), 0u) << lastError();
  ncclWindow_t none = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(local.comms[0], data[0].data(), 64, &none, 0x10), ncclInvalidArgument);
  EXPECT_EQ(lastError().rfind("ncclCommWindowRegister: winFlags 0x10", 0), 0u) << lastError();
}

TEST(NcclLibrary, RevokeRefusesNewWorkAndKeepsShrinkAndDestroy) {
  LocalComms local(2);
  ncclComm_t comm = local.comms[0];
  EXPECT_EQ(ncclCommRevoke(comm, 3), ncclInvalidArgument);
  EXPECT_EQ(lastError().rfind("ncclCommRevoke: revokeFlags 0x3", 0), 0u) << lastError();
  for (ncclComm_t c : local.comms) ASSERT_EQ(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT), ncclSuccess) << lastError();
  float x = 1.0f;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage);
  EXPECT_EQ(lastError().rfind("ncclAllReduce: comm was revoked", 0), 0u) << lastError();
  EXPECT_EQ(ncclCommFinalize(comm), ncclInvalidUsage);
  // Rank 1 is left out; only the survivor calls.
  int gone[] = {1};
  ncclComm_t fresh = nullptr;
  ASSERT_EQ(ncclCommShrink(comm, gone, 1, &fresh, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess) << lastError();
  int count = 0;
  EXPECT_EQ(ncclCommCount(fresh, &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, fresh, nullptr), ncclSuccess) << lastError(fresh);
  EXPECT_EQ(x, 1.0f);
  EXPECT_EQ(ncclCommDestroy(fresh), ncclSuccess);
}

TEST(NcclLibrary, TeamQueriesDescribeTheCommunicator) {
  LocalComms local(2);
  for (int r = 0; r < 2; ++r) {
    ncclComm_t comm = local.comms[static_cast<size_t>(r)];
    const ncclTeam_t world = ncclTeamWorld(comm);
    EXPECT_EQ(world.nRanks, 2);
    EXPECT_EQ(world.rank, r);
    EXPECT_EQ(world.stride, 1);
    const ncclTeam_t lsa = ncclTeamLsa(comm);
    EXPECT_EQ(lsa.nRanks, 1);
    EXPECT_EQ(lsa.rank, 0);
    const ncclTeam_t rail = ncclTeamRail(comm);
    EXPECT_EQ(rail.nRanks, 2);
    EXPECT_EQ(rail.rank, r);
    EXPECT_EQ(ncclTeamRankToWorld(comm, world, 1 - r), 1 - r);
    EXPECT_EQ(ncclTeamRankToWorld(comm, rail, 0), 0);
    EXPECT_EQ(ncclTeamRankToLsa(comm, lsa, 0), 0);
  }
  const ncclTeam_t none = ncclTeamWorld(nullptr);
  EXPECT_EQ(none.nRanks, 0);
  EXPECT_EQ(lastError().rfind("ncclTeamWorld: comm", 0), 0u) << lastError();
  EXPECT_EQ(ncclTeamRankToWorld(nullptr, none, 0), -1);
}

TEST(NcclLibrary, GroupDrivesSeveralCommunicatorsFromOneThread) {
  LocalComms local(3);
  std::vector<std::vector<float>> send(3), recv(3);
  std::vector<ncclRedOp_t> ops(3);
  float scale = 2.0f;
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[static_cast<size_t>(r)], &scale, ncclFloat, ncclScalarHostImmediate,
                                       local.comms[static_cast<size_t>(r)]),
              ncclSuccess)
        << lastError();
    EXPECT_GE(static_cast<int>(ops[static_cast<size_t>(r)]), static_cast<int>(ncclNumOps));
    send[static_cast<size_t>(r)].assign(100, static_cast<float>(r + 1));
    recv[static_cast<size_t>(r)].assign(100, 0.0f);
  }
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    const size_t i = static_cast<size_t>(r);
    ASSERT_EQ(ncclAllReduce(send[i].data(), recv[i].data(), 100, ncclFloat, ops[i], local.comms[i], nullptr),
              ncclSuccess)
        << lastError();
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << lastError();
  for (int r = 0; r < 3; ++r) {
    const size_t i = static_cast<size_t>(r);
    for (float v : recv[i]) ASSERT_EQ(v, 12.0f);  // 2 * (1 + 2 + 3)
    EXPECT_EQ(ncclRedOpDestroy(ops[i], local.comms[i]), ncclSuccess);
    ncclResult_t async = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(local.comms[i], &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess);
    int device = 0;
    EXPECT_EQ(ncclCommCuDevice(local.comms[i], &device), ncclSuccess);
    EXPECT_EQ(device, -1) << "host communicators have no CUDA device";
    EXPECT_EQ(ncclCommFinalize(local.comms[i]), ncclSuccess);
  }
}

TEST(NcclLibrary, MemoryAndRegistration) {
  LocalComms local(1);
  void* p = nullptr;
  ASSERT_EQ(ncclMemAlloc(&p, 4096), ncclSuccess);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 4096);
  void* handle = nullptr;
  EXPECT_EQ(ncclCommRegister(local.comms[0], p, 4096, &handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(local.comms[0], handle), ncclSuccess);
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
}

// A config laid out as an older or newer NCCL header made it (e.g. 2.19's:
// fields up to splitShare), its fields unset as that header's initializer
// leaves them, embedded in a buffer whose other bytes are garbage.
struct OldConfigBuffer {
  explicit OldConfigBuffer(size_t size, unsigned version) : bytes(256, 0x5a) {
    const ncclConfig_t unset = NCCL_CONFIG_INITIALIZER;
    std::memcpy(bytes.data(), &unset, std::min(size, sizeof unset));
    std::memcpy(bytes.data() + offsetof(ncclConfig_t, size), &size, sizeof size);
    const unsigned magic = 0xcafebeef;
    std::memcpy(bytes.data() + offsetof(ncclConfig_t, magic), &magic, sizeof magic);
    std::memcpy(bytes.data() + offsetof(ncclConfig_t, version), &version, sizeof version);
    const int blocking = 1;
    std::memcpy(bytes.data() + offsetof(ncclConfig_t, blocking), &blocking, sizeof blocking);
    const char* noName = nullptr;
    std::memcpy(bytes.data() + offsetof(ncclConfig_t, netName), &noName, sizeof noName);
  }
  ncclConfig_t* config() { return reinterpret_cast<ncclConfig_t*>(bytes.data()); }
  std::vector<unsigned char> bytes;
};

ncclResult_t initOneRank(ncclComm_t* comm, ncclConfig_t* config) {
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id)) return r;
  return ncclCommInitRankConfig(comm, 1, id, 0, config);
}

// config.blocking = 0 through the NCCL names: ncclInProgress, then the state
// from ncclCommGetAsyncError, as an NCCL application polls it.
TEST(NcclLibrary, NonblockingInitIsPolledThroughGetAsyncError) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(initOneRank(&comm, &config), ncclInProgress) << lastError();
  ncclResult_t state = ncclInProgress;
  for (int i = 0; i < 60000 && state == ncclInProgress; ++i) {
    ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(state, ncclSuccess) << lastError();
  int count = 0;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

// ncclCommAbort stops a collective still queued on a stream whose peer
// never joins: the communicator is aborted before the streams made for it
// are destroyed (destroying them waits for their work). On the sim device,
// whose default native stream the NULL cudaStream_t is.
TEST(NcclLibrary, AbortStopsACollectiveQueuedOnAStream) {
  setenv("HCL_DEVICE", "sim", 1);
  setenv("HCL_TIMEOUT_MS", "600000", 1);
  ncclComm_t comms[2] = {nullptr, nullptr};
  const ncclResult_t made = ncclCommInitAll(comms, 2, nullptr);
  unsetenv("HCL_DEVICE");
  unsetenv("HCL_TIMEOUT_MS");
  ASSERT_EQ(made, ncclSuccess) << lastError();
  std::vector<float> data(1 << 16, 1.0f);
  ASSERT_EQ(ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess)
      << lastError(comms[0]);  // rank 1 never joins
  auto aborted = std::async(std::launch::async, [&] { return ncclCommAbort(comms[0]); });
  ASSERT_EQ(aborted.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "ncclCommAbort waited for the collective it should stop";
  EXPECT_EQ(aborted.get(), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

TEST(NcclLibrary, ACallOnARevokedDeviceCommunicatorGivesTheRevokesCodeAndText) {
  setenv("HCL_DEVICE", "sim", 1);
  ncclComm_t comm = nullptr;
  const ncclResult_t made = ncclCommInitAll(&comm, 1, nullptr);
  unsetenv("HCL_DEVICE");
  ASSERT_EQ(made, ncclSuccess) << lastError();
  ASSERT_EQ(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclSuccess) << lastError(comm);
  float x = 1;
  // Not a generic invalid argument from routing the stream: the call's own refusal.
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage);
  const std::string text = lastError(comm);
  EXPECT_EQ(text.rfind("ncclAllReduce: comm was revoked", 0), 0u) << text;
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess) << lastError(comm);
}

TEST(NcclLibrary, ConfigsOfOlderAndNewerVersionsAreAccepted) {
  // 2.19: 48 bytes; 2.25: up to trafficClass/commName; 2.28: ours; 2.30-like: 32 more bytes.
  const struct {
    size_t size;
    unsigned version;
  } cases[] = {{48, 21900}, {56, 22500}, {sizeof(ncclConfig_t), 22809}, {sizeof(ncclConfig_t) + 32, 23000}};
  for (const auto& c : cases) {
    OldConfigBuffer buffer(c.size, c.version);
    if (c.size > offsetof(ncclConfig_t, commName)) {
      const char* name = "old-config";
      std::memcpy(buffer.bytes.data() + offsetof(ncclConfig_t, commName), &name, sizeof name);
    }
    ncclComm_t comm = nullptr;
    ASSERT_EQ(initOneRank(&comm, buffer.config()), ncclSuccess) << c.version << ": " << lastError();
    int count = 0;
    EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
    EXPECT_EQ(count, 1);
    ncclComm_t child = nullptr;
    EXPECT_EQ(ncclCommSplit(comm, 0, 0, &child, buffer.config()), ncclSuccess) << lastError(comm);
    EXPECT_NE(child, nullptr);
    EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  }
  ncclConfig_t current = NCCL_CONFIG_INITIALIZER;
  current.blocking = 1;
  current.commName = "current";
  ncclComm_t comm = nullptr;
  ASSERT_EQ(initOneRank(&comm, &current), ncclSuccess) << lastError();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(NcclLibrary, ScalableInitAndInitAllArguments) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 1, ids, &config), ncclSuccess) << lastError();
  int rank = -1;
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 0, ids, nullptr), ncclInvalidArgument);
  EXPECT_EQ(lastError(), "ncclCommInitRankScalable: nId 0 must be from 1 to nranks (1)");
  // As NCCL, more roots than ranks is refused (and the ids past nranks are not read).
  comm = reinterpret_cast<ncclComm_t>(&config);
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 2, ids, nullptr), ncclInvalidArgument);
  EXPECT_EQ(lastError(), "ncclCommInitRankScalable: nId 2 must be from 1 to nranks (1)");
  EXPECT_EQ(comm, nullptr) << "a refused init hands out no communicator";
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 1, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(lastError(), "ncclCommInitRankScalable: commIds is NULL");
  ncclComm_t comms[1] = {reinterpret_cast<ncclComm_t>(&config)};
  EXPECT_EQ(ncclCommInitAll(comms, -1, nullptr), ncclInvalidArgument);
  EXPECT_EQ(lastError().rfind("ncclCommInitAll: ndev -1", 0), 0u) << lastError();
  EXPECT_EQ(comms[0], reinterpret_cast<ncclComm_t>(&config));
  EXPECT_EQ(ncclCommInitAll(comms, 0, nullptr), ncclSuccess) << "NCCL rejects only a negative ndev";
  EXPECT_EQ(comms[0], reinterpret_cast<ncclComm_t>(&config));
  void* none = &config;
  EXPECT_EQ(ncclMemAlloc(&none, 0), ncclSuccess) << "as cudaMalloc of 0 bytes";
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(ncclMemFree(none), ncclSuccess);
  EXPECT_EQ(ncclCommInitAll(comms, 1 << 30, nullptr), ncclInvalidArgument) << "refused before any allocation";
  EXPECT_EQ(lastError().rfind("ncclCommInitAll: ndev 1073741824", 0), 0u) << lastError();
  EXPECT_EQ(comms[0], reinterpret_cast<ncclComm_t>(&config));
  EXPECT_EQ(ncclCommInitAll(nullptr, 1, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(nullptr, 1, ids[0], 0), ncclInvalidArgument);
}

// As NCCL: the group ends, its operations are priced and none of them runs.
TEST(NcclLibrary, GroupSimulateEndEstimatesWithoutRunning) {
  LocalComms local(2);
  std::vector<std::vector<float>> data(2, std::vector<float>(1 << 18, 1.0f));
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&sim), ncclInvalidUsage) << "no group is open";
  EXPECT_NE(lastError().find("no matching"), std::string::npos) << lastError();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), data[r].size(), ncclFloat, ncclSum, local.comms[r], nullptr),
              ncclSuccess);
  }
  ASSERT_EQ(ncclGroupSimulateEnd(&sim), ncclSuccess) << lastError();
  EXPECT_GT(sim.estimatedTime, 0.0f);
  EXPECT_NE(sim.estimatedTime, NCCL_UNDEF_FLOAT);
  for (const auto& d : data) EXPECT_EQ(d[0], 1.0f) << "a simulated group ran";
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "the simulation closed the group";

  // A larger group costs more.
  const float one = sim.estimatedTime;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int repeat = 0; repeat < 2; ++repeat) {
    for (size_t r = 0; r < 2; ++r) {
      ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), data[r].size(), ncclFloat, ncclSum, local.comms[r],
                              nullptr),
                ncclSuccess);
    }
  }
  ASSERT_EQ(ncclGroupSimulateEnd(&sim), ncclSuccess) << lastError();
  EXPECT_GT(sim.estimatedTime, one);

  // As NCCL: a bad simInfo drops the group (and closes it); none at all
  // ends it for real.
  ncclSimInfo_t wrong = NCCL_SIM_INFO_INITIALIZER;
  wrong.magic = 1;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), data[r].size(), ncclFloat, ncclSum, local.comms[r], nullptr),
              ncclSuccess);
  }
  EXPECT_EQ(ncclGroupSimulateEnd(&wrong), ncclInvalidArgument);
  EXPECT_NE(lastError().find("magic"), std::string::npos) << lastError();
  EXPECT_EQ(wrong.estimatedTime, NCCL_UNDEF_FLOAT);
  for (const auto& d : data) EXPECT_EQ(d[0], 1.0f) << "the refused group ran";
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "the refused simulation closed the group";
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), data[r].size(), ncclFloat, ncclSum, local.comms[r], nullptr),
              ncclSuccess);
  }
  EXPECT_EQ(ncclGroupSimulateEnd(nullptr), ncclSuccess) << lastError();
  for (const auto& d : data) EXPECT_EQ(d[0], 2.0f) << "without a simInfo the group runs";
  // At an inner level the simulation only closes that level.
  ncclSimInfo_t inner = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupSimulateEnd(&inner), ncclSuccess);
  EXPECT_EQ(inner.estimatedTime, NCCL_UNDEF_FLOAT);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  // As NCCL, an inner end reads no simInfo, even a bad one: the group runs
  // at its outer end.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclAllReduce(data[r].data(), data[r].data(), data[r].size(), ncclFloat, ncclSum, local.comms[r], nullptr),
              ncclSuccess);
  }
  EXPECT_EQ(ncclGroupSimulateEnd(&wrong), ncclSuccess) << lastError();
  EXPECT_EQ(wrong.estimatedTime, NCCL_UNDEF_FLOAT);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << lastError();
  for (const auto& d : data) EXPECT_EQ(d[0], 4.0f) << "the group ran at its outer end";
}

// A config refused inside a group fails the group, as every other call does.
TEST(NcclLibrary, RefusedConfigInsideAGroupFailsTheGroup) {
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x12345678;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 1, id, 0, &bad), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_NE(lastError().find("config->magic"), std::string::npos) << lastError();
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << "the next group starts clean";
}

TEST(NcclLibrary, MalformedConfigsAreInvalidArguments) {
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0x12345678;
  ncclComm_t comm = reinterpret_cast<ncclComm_t>(&bad);
  EXPECT_EQ(initOneRank(&comm, &bad), ncclInvalidArgument);
  EXPECT_EQ(lastError().rfind("ncclCommInitRankConfig: config->magic 0x12345678", 0), 0u) << lastError();
  EXPECT_NE(lastError().find("NCCL_CONFIG_INITIALIZER"), std::string::npos) << lastError();
  EXPECT_EQ(comm, nullptr) << "as NCCL, a refused init sets *comm to NULL";
  OldConfigBuffer tiny(16, 21400);
  comm = reinterpret_cast<ncclComm_t>(&bad);
  EXPECT_EQ(initOneRank(&comm, tiny.config()), ncclInvalidArgument);
  EXPECT_NE(lastError().find("config->size 16"), std::string::npos) << lastError();
  EXPECT_EQ(comm, nullptr);
  ncclUniqueId ids[1];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  comm = reinterpret_cast<ncclComm_t>(&bad);
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 1, 0, 1, ids, &bad), ncclInvalidArgument);
  EXPECT_EQ(comm, nullptr);
}

TEST(NcclLibrary, ProfilingTwinsAreTheSameFunctions) {
  std::ifstream in(HCL_TEST_SYMBOL_LIST);
  std::string name;
  int twins = 0;
  while (in >> name) {
    if (name.rfind("pnccl", 0) != 0) continue;
    void* profiled = dlsym(RTLD_DEFAULT, name.c_str());
    void* plain = dlsym(RTLD_DEFAULT, name.substr(1).c_str());
    ASSERT_NE(profiled, nullptr) << name;
    EXPECT_EQ(profiled, plain) << name;
    ++twins;
  }
  EXPECT_EQ(twins, 52);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "hclAllReduce"), nullptr) << "HCL's own API must stay hidden";
}

// cudaMalloc through the CUDA runtime, when this machine has a usable GPU.
struct CudaBuffer {
  CudaBuffer() {
    for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"}) {
      if ((runtime = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (!runtime) {
      reason = "no CUDA runtime library (libcudart) can be loaded";
      return;
    }
    auto alloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(runtime, "cudaMalloc"));
    free = reinterpret_cast<int (*)(void*)>(dlsym(runtime, "cudaFree"));
    int err = alloc ? alloc(&ptr, 4096) : -1;
    if (err != 0) {
      ptr = nullptr;
      reason = "cudaMalloc failed with error " + std::to_string(err) + " (no GPU or driver on this machine)";
    }
  }
  ~CudaBuffer() {
    if (ptr) free(ptr);
  }
  void* runtime = nullptr;
  int (*free)(void*) = nullptr;
  void* ptr = nullptr;
  std::string reason;
};

TEST(NcclLibrary, DeviceMemoryIsRefusedWithAClearError) {
  CudaBuffer device;
  if (!device.ptr) GTEST_SKIP() << device.reason;
  LocalComms local(1);
  float host[4] = {};
  EXPECT_EQ(ncclAllReduce(device.ptr, host, 4, ncclFloat, ncclSum, local.comms[0], nullptr), ncclInvalidArgument);
  EXPECT_NE(lastError(local.comms[0]).find("the communicator computes on the CPU"),
            std::string::npos)
      << lastError(local.comms[0]);
  EXPECT_EQ(lastError(local.comms[0]).rfind("ncclAllReduce: sendbuff", 0), 0u) << lastError(local.comms[0]);
  EXPECT_EQ(ncclAllReduce(host, host, 4, ncclFloat, ncclSum, local.comms[0], nullptr), ncclSuccess);
}

}  // namespace
