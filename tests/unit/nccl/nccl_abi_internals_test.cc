// The ABI layer's pure parts: config translation across NCCL versions, NCCL
// wording of HCL's messages, and the host-memory check with a stand-in for
// the CUDA runtime; and the calls whose effect only HCL's internals show.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_root.h"

#include "plugins/nccl/config_compat.h"
#include "plugins/nccl/error_text.h"
#include "plugins/nccl/memory_routing.h"

namespace hcl::nccl {
namespace {

// The bytes an older or newer header's NCCL_CONFIG_INITIALIZER plus user
// settings produce: `size` owned bytes, every other byte 0x5a.
std::vector<unsigned char> configBytes(size_t size, unsigned version) {
  std::vector<unsigned char> bytes(256, 0x5a);
  ncclConfig_t full = NCCL_CONFIG_INITIALIZER;
  full.size = size;
  full.version = version;
  full.blocking = 0;
  full.cgaClusterSize = 2;
  full.minCTAs = 3;
  full.maxCTAs = 4;
  full.netName = "Socket";
  full.splitShare = 1;
  full.trafficClass = 5;
  full.commName = "named";
  full.collnetEnable = 0;
  full.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  full.shrinkShare = 1;
  full.nvlsCTAs = 6;
  full.nChannelsPerNetPeer = 7;
  full.nvlinkCentricSched = 1;
  std::memcpy(bytes.data(), &full, std::min(size, sizeof full));
  return bytes;
}

ConfigTranslation translate(std::vector<unsigned char>& bytes) {
  ConfigTranslation t;
  const Status s = translateConfig(reinterpret_cast<const ncclConfig_t*>(bytes.data()), t);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

TEST(NcclConfig, CurrentVersionIsCopiedWhole) {
  auto bytes = configBytes(sizeof(ncclConfig_t), 22809);
  const auto t = translate(bytes);
  EXPECT_EQ(t.ignoredBytes, 0u);
  EXPECT_EQ(t.config.blocking, 0);
  EXPECT_STREQ(t.config.netName, "Socket");
  EXPECT_EQ(t.config.trafficClass, 5);
  EXPECT_STREQ(t.config.commName, "named");
  EXPECT_EQ(t.config.CTAPolicy, NCCL_CTA_POLICY_ZERO);
  EXPECT_EQ(t.config.nvlinkCentricSched, 1);
  EXPECT_EQ(t.config.size, sizeof(hclConfig_t));
  EXPECT_EQ(t.config.magic, HCL_CONFIG_MAGIC);
  EXPECT_EQ(t.config.version, static_cast<unsigned>(HCL_NCCL_VERSION_CODE));
}

TEST(NcclConfig, Nccl219StructKeepsItsFieldsAndNothingBeyond) {
  // sizeof(ncclConfig_v21900) is 48: the fields up to splitShare plus padding
  // where 2.25 later put trafficClass.
  auto bytes = configBytes(48, 21900);
  std::memset(bytes.data() + offsetof(ncclConfig_t, trafficClass), 0x5a, 4);
  const auto t = translate(bytes);
  EXPECT_EQ(t.config.blocking, 0);
  EXPECT_EQ(t.config.maxCTAs, 4);
  EXPECT_STREQ(t.config.netName, "Socket");
  EXPECT_EQ(t.config.splitShare, 1);
  EXPECT_EQ(t.config.trafficClass, HCL_CONFIG_UNDEF_INT) << "padding of a 2.19 struct is not a traffic class";
  EXPECT_EQ(t.config.commName, nullptr);
  EXPECT_EQ(t.config.collnetEnable, HCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(t.config.nvlinkCentricSched, HCL_CONFIG_UNDEF_INT);
}

TEST(NcclConfig, FieldsAVersionPredatesAreUndefinedEvenWithinItsSize) {
  auto bytes = configBytes(sizeof(ncclConfig_t), 22600);
  auto t = translate(bytes);
  EXPECT_EQ(t.config.trafficClass, 5);
  EXPECT_STREQ(t.config.commName, "named");
  EXPECT_EQ(t.config.CTAPolicy, HCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(t.config.nvlsCTAs, HCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(t.config.nChannelsPerNetPeer, HCL_CONFIG_UNDEF_INT);

  bytes = configBytes(sizeof(ncclConfig_t), 22700);
  t = translate(bytes);
  EXPECT_EQ(t.config.CTAPolicy, NCCL_CTA_POLICY_ZERO);
  EXPECT_EQ(t.config.nChannelsPerNetPeer, HCL_CONFIG_UNDEF_INT);

  bytes = configBytes(sizeof(ncclConfig_t), 21600);
  t = translate(bytes);
  EXPECT_EQ(t.config.blocking, 0);
  EXPECT_EQ(t.config.cgaClusterSize, HCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(t.config.netName, nullptr);
}

TEST(NcclConfig, NewerStructsLoseOnlyTheirNewFields) {
  auto bytes = configBytes(sizeof(ncclConfig_t) + 24, 23000);
  const auto t = translate(bytes);
  EXPECT_EQ(t.ignoredBytes, 24u);
  EXPECT_STREQ(t.config.commName, "named");
  EXPECT_EQ(t.config.nvlinkCentricSched, 1);
}

TEST(NcclConfig, MalformedStructsAreInvalidArguments) {
  ConfigTranslation t;
  auto bytes = configBytes(sizeof(ncclConfig_t), 22809);
  bytes[offsetof(ncclConfig_t, magic)] ^= 1;
  Status s = translateConfig(reinterpret_cast<const ncclConfig_t*>(bytes.data()), t);
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_NE(s.message().find("NCCL_CONFIG_INITIALIZER"), std::string::npos) << s.message();
  bytes = configBytes(12, 21400);
  s = translateConfig(reinterpret_cast<const ncclConfig_t*>(bytes.data()), t);
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_NE(s.message().find("config->size 12"), std::string::npos) << s.message();
  EXPECT_EQ(translateConfig(nullptr, t).code(), hclInvalidArgument);
}

TEST(NcclWording, HclIdentifiersBecomeNcclOnes) {
  EXPECT_EQ(ncclWording("hclAllReduce: recvbuff is NULL with count 4"), "ncclAllReduce: recvbuff is NULL with count 4");
  EXPECT_EQ(ncclWording("datatype 42 is not a valid hclDataType_t"), "datatype 42 is not a valid ncclDataType_t");
  EXPECT_EQ(ncclWording("(hclCommSplit) and [hclComm_t]"), "(ncclCommSplit) and [ncclComm_t]");
  EXPECT_EQ(ncclWording("raise HCL_TIMEOUT_MS; HCL 0.1"), "raise HCL_TIMEOUT_MS; HCL 0.1");
  EXPECT_EQ(ncclWording("xhclFoo hcl hclfoo myhclBar"), "xhclFoo hcl hclfoo myhclBar");
  EXPECT_EQ(ncclWording("hcl"), "hcl");
  EXPECT_EQ(ncclWording("color -2 must be non-negative or HCL_SPLIT_NOCOLOR"),
            "color -2 must be non-negative or NCCL_SPLIT_NOCOLOR");
  // Only HCL's API names change: user text in a message stays as it was.
  EXPECT_EQ(ncclWording("HCL_LINK_MODEL=/data/hclModels/lm.txt: cannot open"),
            "HCL_LINK_MODEL=/data/hclModels/lm.txt: cannot open");
  EXPECT_EQ(ncclWording("HCL_FABRIC 'hclFabric,x' via hclAllReduce"), "HCL_FABRIC 'hclFabric,x' via ncclAllReduce");
  EXPECT_EQ(ncclWording("HCL_DEVICE=cuda"), "HCL_DEVICE=cuda");
  EXPECT_EQ(ncclWording(""), "");
}

TEST(NcclWording, ResultStrings) {
  EXPECT_STREQ(resultString(ncclSuccess), "no error");
  EXPECT_NE(std::string(resultString(ncclInvalidArgument)).find("NCCL_DEBUG=WARN"), std::string::npos);
  EXPECT_STREQ(resultString(static_cast<ncclResult_t>(99)), "unknown result code");
}

TEST(NcclMemoryRouting, DeviceBuffersAreRefusedByName) {
  int host = 0;
  alignas(64) static char fakeDevice[64];
  const MemoryClassifier classify = [](const void* p) {
    return p == fakeDevice ? MemoryKind::CudaDevice : MemoryKind::Host;
  };
  EXPECT_TRUE(requireHostMemory({{"sendbuff", &host}, {"recvbuff", nullptr}}, classify).ok());
  const Status s = requireHostMemory({{"sendbuff", &host}, {"recvbuff", fakeDevice}}, classify);
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_EQ(s.message().rfind("recvbuff 0x", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("the communicator computes on the CPU"), std::string::npos);
}

TEST(NcclMemoryRouting, HostMemoryIsHostWhateverCudaThisMachineHas) {
  int stackValue = 0;
  std::vector<int> heap(16);
  const auto& classify = cudaMemoryClassifier();
  EXPECT_EQ(classify(&stackValue), MemoryKind::Host);
  EXPECT_EQ(classify(heap.data()), MemoryKind::Host);
  EXPECT_EQ(classify(reinterpret_cast<const void*>(0x10)), MemoryKind::Host);
}

// Every id reaches HCL, which stops the roots it does not join: the ABI
// layer once passed only the first, and HCL read the others past it.
TEST(NcclScalableInit, TheRootsOfTheOtherIdsStop) {
  ncclUniqueId ids[2];
  ASSERT_EQ(pncclGetUniqueId(&ids[0]), ncclSuccess);
  ASSERT_EQ(pncclGetUniqueId(&ids[1]), ncclSuccess);
  hclUniqueId second{};
  static_assert(sizeof second == sizeof ids[1]);
  std::memcpy(&second, &ids[1], sizeof second);
  UniqueIdContents contents;
  ASSERT_TRUE(decodeUniqueId(second, contents).ok());
  if (contents.rootStartedByRank0) GTEST_SKIP() << "HCL_COMM_ID is set: ids start no root of their own";
  ASSERT_TRUE(bootstrapRootRunning(contents.rootPort));
  ncclComm_t comms[2] = {nullptr, nullptr};
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] { EXPECT_EQ(pncclCommInitRankScalable(&comms[r], 2, r, 2, ids, nullptr), ncclSuccess); });
    }
  }
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (bootstrapRootRunning(contents.rootPort) && std::chrono::steady_clock::now() < giveUp) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(bootstrapRootRunning(contents.rootPort));
  for (ncclComm_t c : comms) EXPECT_EQ(pncclCommDestroy(c), ncclSuccess);
}

}  // namespace
}  // namespace hcl::nccl
