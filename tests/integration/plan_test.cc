// The plan agreed at init: hclCommGetPlan, HCL_LINK_MODEL, HCL_PROBE, and
// hierarchical algorithms over real transports between emulated hosts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "collective_checks.h"
#include "multiprocess.h"

namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

std::string writeTempFile(const std::string& text) {
  char path[] = "/tmp/hcl-link-model-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

std::vector<hclComm_t> initAll(int n) {
  std::vector<hclComm_t> comms(static_cast<size_t>(n), nullptr);
  EXPECT_EQ(hclCommInitAll(comms.data(), n, nullptr), hclSuccess) << hclGetLastError(nullptr);
  return comms;
}

void destroyAll(std::vector<hclComm_t>& comms) {
  for (hclComm_t c : comms) {
    if (c) {
      EXPECT_EQ(hclCommDestroy(c), hclSuccess);
    }
  }
}

TEST(GetPlan, EveryRankReportsTheSameChoiceOverLocalLinks) {
  auto comms = initAll(4);
  for (const char* coll : {"allreduce", "AllGather", "reducescatter", "broadcast", "reduce", "alltoall"}) {
    for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{16} << 20}) {
      hclPlanInfo_t first{};
      ASSERT_EQ(hclCommGetPlan(comms[0], coll, bytes, &first), hclSuccess) << hclGetLastError(nullptr);
      EXPECT_GT(std::strlen(first.algorithm), 0u);
      EXPECT_GT(first.estimatedUs, 0) << coll << " " << bytes;
      EXPECT_STREQ(first.linkClasses, "local") << coll;
      EXPECT_NE(std::strstr(first.candidates, first.algorithm), nullptr) << first.candidates;
      EXPECT_STREQ(first.groups, "");  // one process: no hierarchy
      for (size_t r = 1; r < comms.size(); ++r) {
        hclPlanInfo_t other{};
        ASSERT_EQ(hclCommGetPlan(comms[r], coll, bytes, &other), hclSuccess);
        EXPECT_STREQ(other.algorithm, first.algorithm);
        EXPECT_DOUBLE_EQ(other.estimatedUs, first.estimatedUs);
      }
    }
  }
  destroyAll(comms);
}

TEST(GetPlan, BadArgumentsNameTheArgument) {
  auto comms = initAll(2);
  hclPlanInfo_t info{};
  EXPECT_EQ(hclCommGetPlan(nullptr, "allreduce", 8, &info), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("hclCommGetPlan: comm is NULL"), std::string::npos)
      << hclGetLastError(nullptr);
  EXPECT_EQ(hclCommGetPlan(comms[0], nullptr, 8, &info), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("collective is NULL"), std::string::npos);
  EXPECT_EQ(hclCommGetPlan(comms[0], "allreduc", 8, &info), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("collective 'allreduc' is not one of"), std::string::npos)
      << hclGetLastError(nullptr);
  EXPECT_EQ(hclCommGetPlan(comms[0], "allreduce", 8, nullptr), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("info is NULL"), std::string::npos);
  EXPECT_EQ(hclCommGetPlan(comms[0], "allreduce", 8, &info), hclSuccess);
  // A revoked communicator keeps its plan: it is this rank's own record.
  for (hclComm_t c : comms) ASSERT_EQ(hclCommRevoke(c, HCL_REVOKE_DEFAULT), hclSuccess);
  EXPECT_EQ(hclCommGetPlan(comms[1], "allreduce", 8, &info), hclSuccess) << hclGetLastError(nullptr);
  destroyAll(comms);

  // One whose creation waits for hclGroupEnd has none yet.
  hclUniqueId id;
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  hclComm_t pending = nullptr;
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  ASSERT_EQ(hclCommInitRank(&pending, 1, id, 0), hclSuccess);
  EXPECT_EQ(hclCommGetPlan(pending, "allreduce", 8, &info), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("hclCommGetPlan: comm is still initializing"),
            std::string::npos)
      << hclGetLastError(nullptr);
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(hclCommGetPlan(pending, "allreduce", 8, &info), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(hclCommDestroy(pending), hclSuccess);
}

TEST(LinkModel, AFileChangesTheEstimates) {
  double fast = 0, slow = 0;
  {
    auto comms = initAll(2);
    hclPlanInfo_t info{};
    ASSERT_EQ(hclCommGetPlan(comms[0], "allreduce", 1 << 20, &info), hclSuccess);
    fast = info.estimatedUs;
    destroyAll(comms);
  }
  const std::string path = writeTempFile("# slow local links\nlocal 100us 10MB/s\n");
  {
    ScopedEnv model("HCL_LINK_MODEL", path);
    auto comms = initAll(2);
    hclPlanInfo_t info{};
    ASSERT_EQ(hclCommGetPlan(comms[0], "allreduce", 1 << 20, &info), hclSuccess);
    slow = info.estimatedUs;
    destroyAll(comms);
  }
  std::remove(path.c_str());
  EXPECT_GT(slow, 10 * fast) << "fast " << fast << " us, slow " << slow << " us";
}

TEST(LinkModel, ABadFileFailsInitWithTheLine) {
  const std::string path = writeTempFile("local 1us 10GB/s\nnet:wan 50us\n");
  ScopedEnv model("HCL_LINK_MODEL", path);
  std::vector<hclComm_t> comms(2, nullptr);
  EXPECT_EQ(hclCommInitAll(comms.data(), 2, nullptr), hclInvalidUsage);
  const std::string text = hclGetLastError(nullptr);
  EXPECT_NE(text.find("HCL_LINK_MODEL=" + path + ": line 2"), std::string::npos) << text;
  std::remove(path.c_str());
}

TEST(Probe, MeasuredCostsReachThePlan) {
  ScopedEnv probe("HCL_PROBE", "1");
  auto comms = initAll(3);
  hclPlanInfo_t info{};
  ASSERT_EQ(hclCommGetPlan(comms[1], "allreduce", 1 << 20, &info), hclSuccess);
  EXPECT_GT(info.estimatedUs, 0);
  std::vector<float> data(1024, 1.0f);
  std::vector<std::vector<float>> out(3, std::vector<float>(1024));
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < 3; ++r)
    ASSERT_EQ(hclAllReduce(data.data(), out[r].data(), 1024, hclFloat32, hclSum, comms[r], nullptr), hclSuccess);
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  for (const auto& o : out) EXPECT_EQ(o[17], 3.0f);
  destroyAll(comms);
}

// Two emulated hosts of two ranks each: shared memory inside a host, TCP
// between them. The plan sees the hosts as groups; with hier forced (on rank
// 0, whose table every rank follows) every collective is still exact.
TEST(Hierarchy, EmulatedHostsGroupAndHierIsExactOverRealTransports) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan cannot follow threads started after fork in a multi-threaded process";
#endif
  // Rank 0 runs the bootstrap root, so the parent forks with no threads.
  const hcltest::EnvList env = hcltest::rank0RootEnv("60000");
  auto results = hcltest::runProcesses(
      4,
      [&](int rank) {
        setenv("HCL_HOSTID", rank < 2 ? "emulated-host-a" : "emulated-host-b", 1);
        if (rank == 0) setenv("HCL_ALGO", "hier", 1);
        hclUniqueId id;
        RANK_HCL(hclGetUniqueId(&id));
        hclComm_t comm = nullptr;
        RANK_HCL(hclCommInitRank(&comm, 4, id, rank));
        hclPlanInfo_t info{};
        RANK_HCL(hclCommGetPlan(comm, "allreduce", 16 << 20, &info));
        if (std::strcmp(info.groups, "0 0 1 1") != 0 || std::strcmp(info.algorithm, "hier") != 0) {
          std::fprintf(stderr, "rank %d: groups '%s', algorithm '%s'\n", rank, info.groups, info.algorithm);
          return 2;
        }
        if (std::strstr(info.linkClasses, "shm") == nullptr || std::strstr(info.linkClasses, "net:") == nullptr) {
          std::fprintf(stderr, "rank %d: hier should cross shm and the network: '%s'\n", rank, info.linkClasses);
          return 3;
        }
        hcltest::CheckConfig cfg;
        cfg.bigCounts = {(1u << 18) + 3};
        const int rc = hcltest::checkAllCollectives(comm, cfg);
        RANK_HCL(hclCommDestroy(comm));
        return rc;
      },
      400, env);
  EXPECT_EQ(hcltest::describeFailures(results), "");
}

// Two rank processes that could link over TCP or verbs (the fake verbs
// library), rank 0 running the bootstrap root; none, saying why, where the
// build has no verbs transport or TSan cannot follow the forks.
std::optional<hcltest::EnvList> tcpOrVerbsEnv(std::string* whyNot) {
#if defined(__SANITIZE_THREAD__)
  *whyNot = "TSan cannot follow threads started after fork in a multi-threaded process";
  return std::nullopt;
#elif !defined(HCL_FAKE_VERBS_LIBRARY)
  *whyNot = "this build has no verbs transport (no infiniband/verbs.h at configure time)";
  return std::nullopt;
#else
  hcltest::EnvList env = hcltest::rank0RootEnv("20000");
  env.push_back({"HCL_SHM_DISABLE", "1"});
  env.push_back({"HCL_IBVERBS_LIBRARY", HCL_FAKE_VERBS_LIBRARY});
  return env;
#endif
}

// NCCL_NET names the network where several could carry the links (TCP
// and verbs on the fake library here), as does a communicator's
// config->netName where NCCL_NET is unset (NCCL_NET wins, as in NCCL), and
// a name that is no network fails init on every rank, naming the variable
// and its value.
TEST(NetworkByName, NcclNetPicksTheNetworkOrFailsInit) {
  std::string why;
  const auto base = tcpOrVerbsEnv(&why);
  if (!base) GTEST_SKIP() << why;
  struct Case {
    const char* net;        // NCCL_NET, where set
    const char* linkClass;  // null: init fails
    const char* configNet = nullptr;  // config->netName, where given
  };
  for (const Case c : {Case{"Socket", "net:"}, Case{"IB", "verbs:"}, Case{"ib", "verbs:"}, Case{"nosuch", nullptr},
                       Case{nullptr, "verbs:", "IB"}, Case{nullptr, "net:", "Socket"}, Case{"Socket", "net:", "IB"},
                       Case{nullptr, nullptr, "nosuch"}}) {
    hcltest::EnvList env = *base;
    if (c.net) env.push_back({"NCCL_NET", c.net});
    auto results = hcltest::runProcesses(
        2,
        [&](int rank) {
          hclUniqueId id;
          RANK_HCL(hclGetUniqueId(&id));
          hclComm_t comm = nullptr;
          hclConfig_t config = HCL_CONFIG_INITIALIZER;
          config.netName = c.configNet;
          const hclResult_t r = hclCommInitRankConfig(&comm, 2, id, rank, &config);
          if (!c.linkClass) {
            const std::string text = hclGetLastError(nullptr);
            const std::string named =
                c.net ? std::string("NCCL_NET='") + c.net + "'" : std::string("config->netName='") + c.configNet + "'";
            RANK_CHECK(r == hclInvalidUsage, "init naming %s gave %d: %s", named.c_str(), (int)r, text.c_str());
            RANK_CHECK(text.find(named) != std::string::npos, "text: %s", text.c_str());
            return 0;
          }
          RANK_HCL(r);
          hclPlanInfo_t info{};
          RANK_HCL(hclCommGetPlan(comm, "allreduce", 1 << 20, &info));
          RANK_CHECK(std::strncmp(info.linkClasses, c.linkClass, std::strlen(c.linkClass)) == 0,
                     "NCCL_NET=%s config %s: links '%s', expected %s...", c.net ? c.net : "(unset)",
                     c.configNet ? c.configNet : "(none)", info.linkClasses, c.linkClass);
          std::vector<float> v(4096, 1.0f + static_cast<float>(rank));
          RANK_HCL(hclAllReduce(v.data(), v.data(), v.size(), hclFloat, hclSum, comm, nullptr));
          RANK_CHECK(v[4095] == 3.0f, "sum %f", static_cast<double>(v[4095]));
          // A split without a config keeps its parent's network, as in NCCL.
          hclComm_t child = nullptr;
          RANK_HCL(hclCommSplit(comm, 0, rank, &child, nullptr));
          hclPlanInfo_t childInfo{};
          RANK_HCL(hclCommGetPlan(child, "allreduce", 1 << 20, &childInfo));
          RANK_CHECK(std::strncmp(childInfo.linkClasses, c.linkClass, std::strlen(c.linkClass)) == 0,
                     "split child: links '%s', expected %s...", childInfo.linkClasses, c.linkClass);
          RANK_HCL(hclCommDestroy(child));
          RANK_HCL(hclCommDestroy(comm));
          return 0;
        },
        120, env);
    EXPECT_EQ(hcltest::describeFailures(results), "") << "NCCL_NET=" << (c.net ? c.net : "(unset)") << " config "
                                                      << (c.configNet ? c.configNet : "(none)");
  }
}

// Only rank 1 asks for IB, and rank 0 has no verbs: rank 1 fails on its
// own request, and rank 0 fails naming rank 1's, not with a generic text.
TEST(NetworkByName, BothEndsOfALinkCheckEachOthersRequest) {
  std::string why;
  const auto env = tcpOrVerbsEnv(&why);
  if (!env) GTEST_SKIP() << why;
  auto results = hcltest::runProcesses(
      2,
      [&](int rank) {
        setenv(rank == 0 ? "HCL_IB" : "NCCL_NET", rank == 0 ? "off" : "IB", 1);
        hclUniqueId id;
        RANK_HCL(hclGetUniqueId(&id));
        hclComm_t comm = nullptr;
        const hclResult_t r = hclCommInitRank(&comm, 2, id, rank);
        const std::string text = hclGetLastError(nullptr);
        RANK_CHECK(r == hclSystemError, "init gave %d: %s", (int)r, text.c_str());
        const char* want = rank == 0 ? "rank 0: rank 1's NCCL_NET='IB', but the link between them can only take"
                                     : "rank 1: NCCL_NET='IB', but the link to rank 0 can only take";
        RANK_CHECK(text.find(want) != std::string::npos, "text: %s", text.c_str());
        return 0;
      },
      120, *env);
  EXPECT_EQ(hcltest::describeFailures(results), "");
}

}  // namespace
