// Every collective, every data type, in place and out of place, with 2-5
// ranks as separate processes, over shared memory and over TCP, and on
// hclMemAlloc buffers, which shared-memory peers map and use directly; and
// with all-reduce, all-gather and all-to-all forced through the shared
// windows (which large messages take) on malloc buffers, on hclMemAlloc
// buffers, with peers' memory reached only through the kernel, and with
// the windows' direct steps. And 4 ranks pinned two to a CPU, whose
// recursive doubling pairs them in an order of their CPUs. And every link
// over libfabric, on its tcp;ofi_rxm and shm providers.
#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

#include "collective_checks.h"
#include "multiprocess.h"
#include "ofi_probe.h"

namespace {

struct Config {
  int nranks;
  bool tcp;
  bool shared = false;  // buffers from hclMemAlloc, which shm peers map
  const char* algo = nullptr;  // HCL_ALGO
  bool mapPeers = true;        // HCL_SHM_MAP
  bool staging = true;         // HCL_WINDOW_STAGING=0 when false: the window's direct steps on malloc buffers
  bool pinnedTwoPerCpu = false;  // ranks 0 and 3 on one CPU, 1 and 2 on another
  const char* ofiProvider = nullptr;  // every link over this libfabric provider
  const char* netPlugin = nullptr;    // every link over this test NCCL net plugin (tests/net_plugin)
  bool verbs = false;                 // every link over HCL's verbs transport on the fake verbs library
};

// The first two CPUs this process may run on; fewer where it has fewer.
std::vector<int> firstTwoCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// The collectives that stage through shared windows, forced at every size.
constexpr const char* kWindows = "allreduce:window;allgather:window;alltoall:window";

class Collectives : public ::testing::TestWithParam<Config> {};

TEST_P(Collectives, EveryCollectiveEveryType) {
  const Config c = GetParam();
  const std::vector<int> cpus = firstTwoCpus();
  if (c.pinnedTwoPerCpu && cpus.size() < 2) {
    GTEST_SKIP() << "needs two CPUs to pin ranks to; this process has " << cpus.size();
  }
  if (c.ofiProvider) {
    if (const std::string why = hcltest::ofiProviderMissing(c.ofiProvider); !why.empty()) GTEST_SKIP() << why;
  }
  // Rank 0 runs the bootstrap root (HCL_COMM_ID), so the parent forks with no threads.
  hcltest::CheckConfig cfg;
  cfg.bigForEveryType = c.nranks == 3 && !c.tcp;
  cfg.sharedMemory = c.shared;
  hcltest::EnvList env = hcltest::rank0RootEnv("60000");
  // Over TCP small allreduces use ring too, so both algorithms meet both transports.
  if (c.tcp) {
    env.push_back({"HCL_SHM_DISABLE", "1"});
    env.push_back({"HCL_ALGO", "allreduce:ring"});
  }
  if (c.ofiProvider) {
    env.push_back({"HCL_SHM_DISABLE", "1"});
    env.push_back({"HCL_OFI_PROVIDER", c.ofiProvider});
  }
  if (c.netPlugin) {
    env.push_back({"HCL_SHM_DISABLE", "1"});
    env.push_back({"HCL_NET_PLUGIN", std::string(HCL_TEST_NET_PLUGIN_DIR) + "/" + c.netPlugin});
    env.push_back({"HCL_TEST_NET_STRICT_CLOSE", "1"});  // a link that finished leaves no request behind
  }
  if (c.verbs) {
#ifdef HCL_FAKE_VERBS_LIBRARY
    env.push_back({"HCL_SHM_DISABLE", "1"});
    env.push_back({"HCL_IBVERBS_LIBRARY", HCL_FAKE_VERBS_LIBRARY});
#else
    GTEST_SKIP() << "this build has no verbs transport (no infiniband/verbs.h at configure time)";
#endif
  }
  if (c.algo) env.push_back({"HCL_ALGO", c.algo});
  if (!c.mapPeers) env.push_back({"HCL_SHM_MAP", "0"});
  if (!c.staging) env.push_back({"HCL_WINDOW_STAGING", "0"});
  auto results = hcltest::runProcesses(
      c.nranks,
      [&](int rank) {
        if (c.pinnedTwoPerCpu && !pinTo(cpus[rank == 0 || rank == 3 ? 0 : 1])) return 90;
        hclUniqueId id;
        RANK_HCL(hclGetUniqueId(&id));
        hclComm_t comm = nullptr;
        RANK_HCL(hclCommInitRank(&comm, c.nranks, id, rank));
        const int rc = hcltest::checkAllCollectives(comm, cfg);
        RANK_HCL(hclCommDestroy(comm));
        return rc;
      },
      400, env);
  EXPECT_EQ(hcltest::describeFailures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Processes, Collectives,
                         ::testing::Values(Config{2, false}, Config{3, false}, Config{4, false}, Config{5, false},
                                           Config{2, true}, Config{3, true}, Config{4, true}, Config{5, true},
                                           Config{2, false, true}, Config{3, false, true},
                                           Config{2, false, false, kWindows},
                                           Config{3, false, false, kWindows},
                                           Config{2, false, true, kWindows},
                                           Config{3, false, false, kWindows, false},
                                           Config{2, false, false, kWindows, true, false},
                                           Config{3, false, false, kWindows, true, false},
                                           Config{4, false, false, nullptr, true, true, true},
                                           Config{3, false, false, nullptr, true, true, false, "tcp;ofi_rxm"},
                                           Config{3, false, false, nullptr, true, true, false, "shm"},
                                           Config{3, false, false, nullptr, true, true, false, nullptr,
                                                  "libnccl-net-hcltest.so"},
                                           Config{2, false, false, nullptr, true, true, false, nullptr,
                                                  "libnccl-net-hcltest-v8.so"},
                                           Config{2, false, false, nullptr, true, true, false, nullptr,
                                                  "libnccl-net-hcltest-v11.so"},
                                           Config{3, false, false, nullptr, true, true, false, nullptr, nullptr,
                                                  true}),
                         [](const auto& info) {
                           const Config& c = info.param;
                           if (c.verbs) return std::to_string(c.nranks) + "ranks_ib";
                           if (c.netPlugin) {
                             const std::string file = c.netPlugin;
                             const std::string version = file.find("-v8") != std::string::npos    ? "_v8"
                                                         : file.find("-v11") != std::string::npos ? "_v11"
                                                                                                  : "";
                             return std::to_string(c.nranks) + "ranks_net_plugin" + version;
                           }
                           if (c.ofiProvider) {
                             return std::to_string(c.nranks) + "ranks_ofi_" +
                                    (std::string(c.ofiProvider) == "shm" ? "shm" : "tcp_rxm");
                           }
                           return std::to_string(c.nranks) + "ranks_" + (c.tcp ? "tcp" : "shm") +
                                  (c.shared ? "_memalloc" : "") + (c.algo ? "_window" : "") +
                                  (c.mapPeers ? "" : "_unmapped") + (c.staging ? "" : "_unstaged") +
                                  (c.pinnedTwoPerCpu ? "_pinned" : "");
                         });

}  // namespace
