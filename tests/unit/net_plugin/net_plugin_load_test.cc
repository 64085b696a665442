// Finding and opening NCCL net plugins: library names, what HCL_NET_PLUGIN
// and its NCCL alias ask for, each interface version through one face, and
// how a plugin's link is chosen and its handles travel.
#include <gtest/gtest.h>

#include "core/peer_info.h"
#include "tests/unit/peer_examples.h"
#include "transports/link.h"
#include "transports/net_plugin/net_plugin.h"
#include "transports/net_plugin/net_plugin_abi.h"
#include "transports/net_plugin/net_plugin_request.h"
#include "transports/prepared_blobs.h"

namespace hcl::netplugin {
namespace {

std::string testPlugin(const char* file) { return std::string(HCL_TEST_NET_PLUGIN_DIR) + "/" + file; }

TEST(NetPluginNames, FollowNcclsLookup) {
  EXPECT_EQ(libraryCandidates(""), std::vector<std::string>{"libnccl-net.so"});
  EXPECT_EQ(libraryCandidates("ofi"), (std::vector<std::string>{"libnccl-net-ofi.so", "ofi"}));
  EXPECT_EQ(libraryCandidates("libnccl-net-x.so"),
            (std::vector<std::string>{"libnccl-net-libnccl-net-x.so.so", "libnccl-net-x.so"}));
  EXPECT_EQ(libraryCandidates("/opt/p/libp.so"), std::vector<std::string>{"/opt/p/libp.so"});
}

TEST(NetPluginRequest, NoneNamedAndDefault) {
  EXPECT_TRUE(parseNetPluginRequest({"none", ParamSource::Env, "HCL_NET_PLUGIN"}).off);
  const NetPluginRequest unset = parseNetPluginRequest({"", ParamSource::Default, ""});
  EXPECT_FALSE(unset.off);
  EXPECT_TRUE(unset.spec.empty());
  EXPECT_FALSE(unset.required);
  const NetPluginRequest own = parseNetPluginRequest({"ofi", ParamSource::Env, "HCL_NET_PLUGIN"});
  EXPECT_EQ(own.spec, "ofi");
  EXPECT_TRUE(own.required);
  const NetPluginRequest nccls = parseNetPluginRequest({"ofi", ParamSource::NcclEnv, "NCCL_NET_PLUGIN"});
  EXPECT_EQ(nccls.spec, "ofi");
  EXPECT_FALSE(nccls.required);
  EXPECT_TRUE(parseNetPluginRequest({"ofi", ParamSource::ConfigFile, "HCL_NET_PLUGIN"}).required);
}

TEST(NetPluginLoad, MissingLibrarySaysWhatWasTried) {
  std::string why;
  EXPECT_EQ(loadNetPlugin("hcl-no-such-plugin", &why), nullptr);
  EXPECT_NE(why.find("libnccl-net-hcl-no-such-plugin.so"), std::string::npos) << why;
  EXPECT_NE(why.find("hcl-no-such-plugin"), std::string::npos) << why;
}

TEST(NetPluginLoad, LibraryWithoutATableIsRefused) {
  std::string why;
  EXPECT_EQ(loadNetPlugin("libm.so.6", &why), nullptr);
  EXPECT_NE(why.find("exports no ncclNetPlugin_v11, _v10, _v9 or _v8"), std::string::npos) << why;
}

struct VersionCase {
  const char* file;
  int version;
};

class NetPluginVersions : public ::testing::TestWithParam<VersionCase> {};

TEST_P(NetPluginVersions, LoadsAndDescribesItsDevices) {
  std::string why;
  NetPlugin* plugin = loadNetPlugin(testPlugin(GetParam().file), &why);
  ASSERT_NE(plugin, nullptr) << why;
  EXPECT_EQ(plugin->version(), GetParam().version);
  EXPECT_EQ(plugin->name(), "hcltest");
  EXPECT_EQ(loadNetPlugin(testPlugin(GetParam().file), &why), plugin) << "opened once per process";
  int count = 0;
  ASSERT_TRUE(plugin->devices(&count).ok());
  EXPECT_EQ(count, 2);
  DeviceProperties p;
  ASSERT_TRUE(plugin->properties(1, p).ok());
  EXPECT_EQ(p.name, "hcltest1");
  EXPECT_EQ(p.speedMbps, 10000);
  EXPECT_TRUE(p.ptrSupport & netabi::kPtrHost);
  EXPECT_EQ(p.maxMessageBytes, GetParam().version == 8 ? size_t{INT32_MAX} : size_t{1} << 30);
  const Status bad = plugin->properties(7, p);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("getProperties failed: invalid argument"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("hcltest"), std::string::npos) << bad.message();
}

INSTANTIATE_TEST_SUITE_P(Abi, NetPluginVersions,
                         ::testing::Values(VersionCase{"libnccl-net-hcltest-v11.so", 11},
                                           VersionCase{"libnccl-net-hcltest.so", 10},
                                           VersionCase{"libnccl-net-hcltest-v9.so", 9},
                                           VersionCase{"libnccl-net-hcltest-v8.so", 8}),
                         [](const auto& info) { return "v" + std::to_string(info.param.version); });

PeerInfo peer(int rank, const std::string& host, const std::string& plugin) {
  PeerInfo p = hcl::testing::peerOnEthernet(rank, host);
  p.netPlugin = plugin;
  return p;
}

TEST(NetPluginLinks, BothWithOnePluginGoOverIt) {
  const Link l = selectLink(peer(0, "a", "hcltest"), peer(1, "b", "hcltest"));
  EXPECT_EQ(l.kind, TransportKind::NetPlugin);
  EXPECT_EQ(l.linkClass, "net:eth+plugin:hcltest") << "priced apart from TCP pairs on the fabric";
  EXPECT_NE(l.reason.find("NCCL net plugin 'hcltest'"), std::string::npos) << l.reason;
}

TEST(NetPluginLinks, PricedAtThePluginsSpeedWhereBothKnowIt) {
  PeerInfo a = peer(0, "a", "hcltest"), b = peer(1, "b", "hcltest");
  a.addresses[0].speedMbps = b.addresses[0].speedMbps = 10000;
  EXPECT_EQ(selectLink(a, b).speedMbps, 10000u) << "no plugin speed: the NIC's";
  a.netPluginSpeedMbps = 400000;
  EXPECT_EQ(selectLink(a, b).speedMbps, 10000u) << "one end's speed alone is not enough";
  b.netPluginSpeedMbps = 200000;
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.speedMbps, 200000u);
  EXPECT_NE(l.reason.find("200 Gbit/s"), std::string::npos) << l.reason;
}

TEST(NetPluginLinks, OtherOrMissingPluginStaysOnTcp) {
  EXPECT_EQ(selectLink(peer(0, "a", "hcltest"), peer(1, "b", "other")).kind, TransportKind::Tcp);
  EXPECT_EQ(selectLink(peer(0, "a", "hcltest"), peer(1, "b", "")).kind, TransportKind::Tcp);
  EXPECT_EQ(selectLink(peer(0, "a", ""), peer(1, "b", "")).kind, TransportKind::Tcp);
}

TEST(NetPluginLinks, SharedMemoryStillWinsWithinAHost) {
  EXPECT_EQ(selectLink(peer(0, "a", "hcltest"), peer(1, "a", "hcltest")).kind, TransportKind::Shm);
  PeerInfo x = peer(0, "a", "hcltest"), y = peer(1, "a", "hcltest");
  x.shmEnabled = y.shmEnabled = false;
  EXPECT_EQ(selectLink(x, y).kind, TransportKind::NetPlugin);
}

TEST(NetPluginLinks, PeerInfoCarriesThePluginName) {
  PeerInfo p = peer(3, "h", "AWS Libfabric");
  p.netPluginSpeedMbps = 100000;
  const std::vector<uint8_t> blob = p.serialize();
  PeerInfo back;
  ASSERT_TRUE(PeerInfo::deserialize(blob.data(), blob.size(), back));
  EXPECT_EQ(back.netPlugin, "AWS Libfabric");
  EXPECT_EQ(back.netPluginSpeedMbps, 100000u);
}

class BlobTransport final : public Transport {
 public:
  BlobTransport(TransportKind k, std::vector<uint8_t> blob) : kind_(k), blob_(std::move(blob)) {}
  TransportKind kind() const override { return kind_; }
  Status listen(const TransportContext&, PeerInfo&) override { return {}; }
  Status prepare(const TransportContext&, const std::vector<int>&) override { return {}; }
  std::vector<uint8_t> preparedFor(int peer) const override { return peer == 1 ? blob_ : std::vector<uint8_t>{}; }
  Status connect(const TransportContext&, const std::vector<int>&,
                 std::vector<std::unique_ptr<Connection>>&) override {
    return {};
  }
  void finish() override {}

 private:
  TransportKind kind_;
  std::vector<uint8_t> blob_;
};

TEST(PreparedBlobs, EachKindReadsItsOwn) {
  std::vector<std::unique_ptr<Transport>> mine;
  mine.push_back(std::make_unique<BlobTransport>(TransportKind::Tcp, std::vector<uint8_t>{}));
  mine.push_back(std::make_unique<BlobTransport>(TransportKind::Ofi, std::vector<uint8_t>{1, 2}));
  mine.push_back(std::make_unique<BlobTransport>(TransportKind::NetPlugin, std::vector<uint8_t>{3, 4, 5}));
  std::vector<std::unique_ptr<Transport>> none;
  none.push_back(std::make_unique<BlobTransport>(TransportKind::Tcp, std::vector<uint8_t>{}));
  EXPECT_TRUE(packPreparedBlobs(mine, 2).empty()) << "nothing for rank 2";
  const std::vector<std::vector<uint8_t>> all = {packPreparedBlobs(mine, 1), packPreparedBlobs(none, 1), {9, 9}};
  EXPECT_TRUE(all[1].empty()) << "nothing to carry adds nothing to the barrier";
  TransportContext ctx;
  ctx.prepared = &all;
  EXPECT_EQ(preparedBlobOf(ctx, 0, TransportKind::NetPlugin), (std::vector<uint8_t>{3, 4, 5}));
  EXPECT_EQ(preparedBlobOf(ctx, 0, TransportKind::Ofi), (std::vector<uint8_t>{1, 2}));
  EXPECT_TRUE(preparedBlobOf(ctx, 0, TransportKind::Tcp).empty());
  EXPECT_TRUE(preparedBlobOf(ctx, 1, TransportKind::NetPlugin).empty());
  EXPECT_TRUE(preparedBlobOf(ctx, 2, TransportKind::NetPlugin).empty()) << "malformed";
  EXPECT_TRUE(preparedBlobOf(ctx, 3, TransportKind::NetPlugin).empty()) << "no such rank";
}

}  // namespace
}  // namespace hcl::netplugin
