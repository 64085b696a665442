// Communicators on a real GPU: several ranks as processes on one GPU (HCL
// allows it, NCCL does not), and ranks mixing the GPU and the CPU device,
// over shared memory and TCP, every collective checked against the reference.
// Each case skips, saying why, where the machine has no such GPU.
//
// The parent process never touches the GPU runtime: a CUDA context does not
// survive fork(), so the probe and every rank run in forked children.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "hcl.h"
#include "multiprocess.h"

namespace {

// Whether `device` can be chosen, asked in a child process; the empty string
// means yes, otherwise the reason it cannot.
std::string whyUnavailable(const std::string& device) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  auto results = hcltest::runProcesses(
      1,
      [&](int) {
        close(fds[0]);
        const hclResult_t r = hclSetDevice(device.c_str());
        const std::string why = r == hclSuccess ? "" : hclGetLastError(nullptr);
        if (!why.empty() && write(fds[1], why.data(), why.size()) < 0) return 2;
        close(fds[1]);
        return r == hclSuccess ? 0 : 1;
      },
      120);
  close(fds[1]);
  std::string why;
  std::array<char, 512> buf{};
  for (ssize_t got; (got = read(fds[0], buf.data(), buf.size())) > 0;) why.append(buf.data(), static_cast<size_t>(got));
  close(fds[0]);
  if (!results[0].exited) return "the probe process died (signal " + std::to_string(results[0].code) + ")";
  if (results[0].code != 0 && why.empty()) return "the probe process failed";
  return why;
}

struct Options {
  bool tcp = false;          // handshakes and host data over TCP instead of shared memory
  bool stage = false;        // HCL_IPC_DISABLE: device buffers through host memory
  bool hostBuffers = false;  // GPU ranks pass host memory
};

class GpuComm : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string why = whyUnavailable(GetParam());
    if (!why.empty()) GTEST_SKIP() << "no usable " << GetParam() << " device: " << why;
  }

  // Runs every collective with ranks as processes on `devices`; `ipc`: whether
  // the communicator must plan the IPC path. Returns the failures described, or "".
  static std::string runEveryCollective(const std::vector<std::string>& devices, bool ipc, Options o = {}) {
    const int n = static_cast<int>(devices.size());
    hclUniqueId id;
    if (hclGetUniqueId(&id) != hclSuccess) return std::string("hclGetUniqueId: ") + hclGetLastError(nullptr);
    // Small chunks: many pipeline steps at small sizes, every row split.
    hcltest::EnvList env{{"HCL_TIMEOUT_MS", "120000"}, {"HCL_STAGE_CHUNK_BYTES", "8192"}};
    if (o.tcp) env.push_back({"HCL_SHM_DISABLE", "1"});
    if (o.stage) env.push_back({"HCL_IPC_DISABLE", "1"});
    auto results = hcltest::runProcesses(
        n,
        [&](int rank) {
          const std::string& device = devices[static_cast<size_t>(rank)];
          RANK_HCL(hclSetDevice(device.c_str()));
          hclComm_t comm = nullptr;
          RANK_HCL(hclCommInitRank(&comm, n, id, rank));
          char name[32];
          RANK_HCL(hclCommGetDevice(comm, name, sizeof name));
          const std::string kind = device.substr(0, device.find(':'));
          RANK_CHECK(std::string(name).rfind(kind, 0) == 0, "rank %d runs on %s, want %s", rank, name, device.c_str());
          hclPlanInfo_t plan;
          RANK_HCL(hclCommGetPlan(comm, "allreduce", 1 << 20, &plan));
          RANK_CHECK((std::string(plan.algorithm) == "ipc") == ipc, "rank %d plans %s (IPC expected: %d)", rank,
                     plan.algorithm, int(ipc));
          hcltest::CheckConfig cfg;
          cfg.counts = {0, 1, 7, 3001};
          cfg.bigCounts = {40000};
          cfg.deviceMemory = kind != "cpu" && !o.hostBuffers;
          const int rc = hcltest::checkAllCollectives(comm, cfg);
          RANK_HCL(hclCommDestroy(comm));
          return rc;
        },
        600, env);
    return hcltest::describeFailures(results);
  }
};

// Ranks on one GPU share memory by the runtime's IPC; also with host
// buffers (device stand-ins), and staged through host memory on request.
// One case each, so that a hang in one is reported apart from the others.
TEST_P(GpuComm, TwoRanksShareOneGpuByIpc) {
  const std::string gpu = std::string(GetParam()) + ":0";
  EXPECT_EQ(runEveryCollective({gpu, gpu}, true), "");
}

TEST_P(GpuComm, TwoRanksShareOneGpuByIpcWithHostBuffers) {
  const std::string gpu = std::string(GetParam()) + ":0";
  EXPECT_EQ(runEveryCollective({gpu, gpu}, true, {.hostBuffers = true}), "");
}

TEST_P(GpuComm, TwoRanksShareOneGpuStaged) {
  const std::string gpu = std::string(GetParam()) + ":0";
  EXPECT_EQ(runEveryCollective({gpu, gpu}, false, {.stage = true}), "");
}

TEST_P(GpuComm, FourRanksShareOneGpuByIpc) {
  const std::string gpu = std::string(GetParam()) + ":0";
  for (bool tcp : {false, true}) {
    EXPECT_EQ(runEveryCollective({gpu, gpu, gpu, gpu}, true, {.tcp = tcp}), "") << (tcp ? "tcp" : "shm");
  }
}

TEST_P(GpuComm, FourRanksShareOneGpuStagedOverShmAndTcp) {
  const std::string gpu = std::string(GetParam()) + ":0";
  for (bool tcp : {false, true}) {
    EXPECT_EQ(runEveryCollective({gpu, gpu, gpu, gpu}, false, {.tcp = tcp, .stage = true}), "")
        << (tcp ? "tcp" : "shm");
  }
}

TEST_P(GpuComm, GpuAndCpuRanksMixOverShmAndTcp) {
  const std::string gpu = std::string(GetParam()) + ":0";
  for (bool tcp : {false, true}) {
    EXPECT_EQ(runEveryCollective({"cpu", gpu, gpu, "cpu"}, false, {.tcp = tcp}), "") << (tcp ? "tcp" : "shm");
  }
}

TEST_P(GpuComm, CommunicatorReportsTheGpu) {
  auto results = hcltest::runProcesses(
      1,
      [&](int) {
        RANK_HCL(hclSetDevice(GetParam()));
        hclUniqueId id;
        RANK_HCL(hclGetUniqueId(&id));
        hclComm_t comm = nullptr;
        RANK_HCL(hclCommInitRank(&comm, 1, id, 0));
        int index = -2;
        RANK_HCL(hclCommCuDevice(comm, &index));
        RANK_CHECK(index == 0, "hclCommCuDevice gave %d, want 0", index);
        void* buf = nullptr;
        RANK_HCL(hclCommMemAlloc(comm, &buf, 4096));
        RANK_HCL(hclCommMemFree(comm, buf));
        RANK_HCL(hclCommDestroy(comm));
        return 0;
      },
      120);
  EXPECT_EQ(hcltest::describeFailures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Vendors, GpuComm, testing::Values("cuda", "hip"),
                         [](const testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
