// HCL's verbs transport in pieces: the port filter, speeds and fabrics,
// link selection, what PeerInfo carries, and the ports found on the fake
// verbs library (tests/ib), which emulates devices and queue pairs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "transports/ib/ib_device_filter.h"
#include "transports/ib/ib_mode.h"
#include "transports/link.h"
#ifdef HCL_FAKE_VERBS_LIBRARY
#include "transports/ib/ib_net.h"
#include "transports/ib/ib_ports.h"
#endif

namespace hcl::ib {
namespace {

TEST(IbDeviceFilter, EmptyAdmitsEveryPort) {
  const DeviceFilter f = DeviceFilter::parse("");
  EXPECT_TRUE(f.admits("mlx5_0", 1));
  EXPECT_TRUE(f.admits("anything", 2));
}

TEST(IbDeviceFilter, NamesArePrefixesUnlessExact) {
  const DeviceFilter prefix = DeviceFilter::parse("mlx5");
  EXPECT_TRUE(prefix.admits("mlx5_0", 1));
  EXPECT_TRUE(prefix.admits("mlx5_12", 1));
  EXPECT_FALSE(prefix.admits("bnxt_re0", 1));
  const DeviceFilter exact = DeviceFilter::parse("=mlx5_1");
  EXPECT_TRUE(exact.admits("mlx5_1", 1));
  EXPECT_FALSE(exact.admits("mlx5_10", 1)) << "'=' asks for the exact name";
}

TEST(IbDeviceFilter, PortsAndExclusion) {
  const DeviceFilter ports = DeviceFilter::parse("mlx5_0:1, mlx5_1:2");
  EXPECT_TRUE(ports.admits("mlx5_0", 1));
  EXPECT_FALSE(ports.admits("mlx5_0", 2));
  EXPECT_TRUE(ports.admits("mlx5_1", 2));
  const DeviceFilter out = DeviceFilter::parse("^mlx5_3");
  EXPECT_FALSE(out.admits("mlx5_3", 1));
  EXPECT_TRUE(out.admits("mlx5_0", 1));
  const DeviceFilter outExact = DeviceFilter::parse("^=mlx5_1");
  EXPECT_FALSE(outExact.admits("mlx5_1", 1));
  EXPECT_TRUE(outExact.admits("mlx5_10", 1));
  EXPECT_FALSE(DeviceFilter::parse("mlx5_0:x").admits("mlx5_0", 1)) << "a port that is no number matches none";
}

TEST(IbMode, ReadFromTheEnvironment) {
  IbMode mode = IbMode::Auto;
  setenv("HCL_IB", "off", 1);
  ASSERT_TRUE(readIbMode(mode).ok());
  EXPECT_EQ(mode, IbMode::Off);
  setenv("HCL_IB", "on", 1);
  ASSERT_TRUE(readIbMode(mode).ok());
  EXPECT_EQ(mode, IbMode::On);
  setenv("NCCL_IB_DISABLE", "1", 1);
  ASSERT_TRUE(readIbMode(mode).ok());
  EXPECT_EQ(mode, IbMode::Off) << "NCCL_IB_DISABLE=1 wins";
  unsetenv("NCCL_IB_DISABLE");
  unsetenv("HCL_IB");
  setenv("HCL_IBVERBS_LIBRARY", "/nowhere/libfake.so", 1);
  ASSERT_TRUE(readIbMode(mode).ok());
  EXPECT_EQ(mode, IbMode::On) << "a library named under HCL's name is asked for";
  unsetenv("HCL_IBVERBS_LIBRARY");
  setenv("HCL_IB", "maybe", 1);
  const Status s = readIbMode(mode);
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_NE(s.message().find("HCL_IB='maybe'"), std::string::npos) << s.message();
  unsetenv("HCL_IB");
}

PeerInfo peer(int rank, const std::string& host, std::vector<std::string> ibFabrics, uint32_t ibMbps = 0) {
  PeerInfo p;
  p.rank = rank;
  p.hostId = host;
  p.pid = 100 + rank;
  NetAddress a;
  a.ifname = "eth0";
  a.ip = "10.0.0." + std::to_string(rank + 1);
  a.port = 4000;
  a.prefixLen = 24;
  a.fabric = "eth";
  a.speedMbps = 25000;
  p.addresses.push_back(a);
  p.ibFabrics = std::move(ibFabrics);
  p.ibSpeedMbps = ibMbps;
  return p;
}

TEST(IbLinks, BothOnOneFabricGoOverVerbs) {
  const Link l = selectLink(peer(0, "a", {"ib:fe80:0000:0000:0000"}, 200000),
                            peer(1, "b", {"ib:fe80:0000:0000:0000"}, 100000));
  EXPECT_EQ(l.kind, TransportKind::Ib);
  EXPECT_EQ(l.nicKind, NicKind::Ib);
  EXPECT_EQ(l.speedMbps, 100000u) << "the slower port";
  EXPECT_EQ(l.linkClass, "verbs:ib:fe80:0000:0000:0000") << "priced apart from TCP on the same hosts";
  EXPECT_NE(l.reason.find("verbs on fabric"), std::string::npos) << l.reason;
  EXPECT_EQ(l.listenerAddress, 0) << "the side connection's address is still chosen";
}

TEST(IbLinks, RoceAndOtherSubnets) {
  EXPECT_EQ(selectLink(peer(0, "a", {"roce"}), peer(1, "b", {"roce"})).nicKind, NicKind::Roce);
  EXPECT_EQ(selectLink(peer(0, "a", {"ib:fe80:0000:0000:0000"}), peer(1, "b", {"ib:fe80:0000:0000:0001"})).kind,
            TransportKind::Tcp)
      << "subnets apart";
  EXPECT_EQ(selectLink(peer(0, "a", {"roce"}), peer(1, "b", {})).kind, TransportKind::Tcp);
  EXPECT_EQ(selectLink(peer(0, "a", {"ib:x", "roce"}), peer(1, "b", {"roce"})).kind, TransportKind::Ib);
}

TEST(IbLinks, SharedMemoryAndNetPluginsComeFirst) {
  EXPECT_EQ(selectLink(peer(0, "a", {"roce"}), peer(1, "a", {"roce"})).kind, TransportKind::Shm);
  PeerInfo a = peer(0, "a", {"roce"}), b = peer(1, "b", {"roce"});
  a.netPlugin = b.netPlugin = "aws";
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::NetPlugin) << "as NCCL prefers a plugin to its internal IB";
  a.ofiEndpoints.push_back({"verbs;ofi_rxm", "fabricA", -1, {1}});
  b.ofiEndpoints.push_back({"verbs;ofi_rxm", "fabricA", -1, {2}});
  a.netPlugin = b.netPlugin = "";
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Ib) << "HCL's verbs before libfabric's";
}

TEST(IbLinks, PeerInfoCarriesTheFabrics) {
  PeerInfo p = peer(2, "h", {"ib:fe80:0000:0000:0000", "roce"}, 400000);
  const std::vector<uint8_t> blob = p.serialize();
  PeerInfo back;
  ASSERT_TRUE(PeerInfo::deserialize(blob.data(), blob.size(), back));
  EXPECT_EQ(back.ibFabrics, p.ibFabrics);
  EXPECT_EQ(back.ibSpeedMbps, 400000u);
}

#ifdef HCL_FAKE_VERBS_LIBRARY
TEST(IbPorts, SpeedsAndFabrics) {
  EXPECT_EQ(portSpeedMbps(32, 2), 100000u) << "EDR 4x";
  EXPECT_EQ(portSpeedMbps(128, 2), 400000u) << "NDR 4x";
  EXPECT_EQ(portSpeedMbps(64, 16), 100000u) << "HDR 2x";
  EXPECT_EQ(portSpeedMbps(3, 2), 0u) << "unknown code";
  ibv_gid gid{};
  gid.raw[0] = 0xfe;
  gid.raw[1] = 0x80;
  gid.raw[7] = 0x01;
  EXPECT_EQ(fabricOf(false, gid), "ib:fe80:0000:0000:0001");
  EXPECT_EQ(fabricOf(true, gid), "roce");
}

TEST(IbPorts, MissingLibraryIsNamed) {
  IbSettings s;
  s.library = "/nowhere/libibverbs-missing.so";
  std::string why;
  EXPECT_EQ(IbNet::open(s, &why), nullptr);
  EXPECT_NE(why.find("libibverbs-missing.so"), std::string::npos) << why;
}

// Devices are opened once per process, so each case that sets the fake's
// devices runs in a fresh process of its own (gtest's threadsafe death
// test style re-executes the binary), exiting 0 when its checks hold.
class FakeVerbs : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  static std::unique_ptr<IbNet> open(const std::string& hca, std::string* why) {
    IbSettings s;
    s.library = HCL_FAKE_VERBS_LIBRARY;
    s.hcaText = hca;
    return IbNet::open(s, why);
  }
  [[noreturn]] static void finish(bool ok, const std::string& why) {
    if (!ok) std::fprintf(stderr, "%s\n", why.c_str());
    std::exit(ok ? 0 : 1);
  }
};

TEST_F(FakeVerbs, ActivePortsTheFilterAdmits) {
  const auto check = [] {
    setenv("HCL_FAKE_VERBS_DEVICES", "3", 1);
    setenv("HCL_FAKE_VERBS_DOWN", "fakeib1", 1);
    std::string why;
    auto net = open("", &why);
    if (!net) finish(false, why);
    const auto& ports = net->ports();
    netplugin::DeviceProperties p;
    if (ports.size() != 2 || ports[0].name != "fakeib0:1" || ports[1].name != "fakeib2:1") {
      finish(false, "expected fakeib0:1 and fakeib2:1 (fakeib1's port is down)");
    }
    if (ports[0].speedMbps != 100000 || ports[0].fabric.rfind("ib:fe80", 0) != 0) {
      finish(false, "fakeib0:1 should be 100 Gbit/s on ib:fe80...: " + ports[0].fabric);
    }
    if (!net->properties(1, p).ok() || p.name != "fakeib2:1" || p.speedMbps != 100000) finish(false, "properties(1)");
    if (net->properties(2, p).ok()) finish(false, "a third port answered");
    auto filtered = open("^fakeib0", &why);
    if (!filtered || filtered->ports().size() != 1 || filtered->ports()[0].name != "fakeib2:1") {
      finish(false, "^fakeib0 should leave fakeib2:1 alone: " + why);
    }
    if (open("=fakeib1", &why) || why.find("fakeib1:1 not active") == std::string::npos) {
      finish(false, "=fakeib1 should find only a port that is down: " + why);
    }
    if (open("mlx5", &why) || why.find("fakeib0:1 left out by HCL_IB_HCA") == std::string::npos) {
      finish(false, "mlx5 should leave every port out: " + why);
    }
    finish(true, "");
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}

TEST_F(FakeVerbs, RoceTakesAnIpv4Gid) {
  const auto check = [] {
    setenv("HCL_FAKE_VERBS_LINK_LAYER", "eth", 1);
    std::string why;
    auto net = open("", &why);
    if (!net) finish(false, why);
    if (net->ports().empty() || !net->ports()[0].ethernet || net->ports()[0].fabric != "roce") {
      finish(false, "expected a RoCE port on fabric 'roce'");
    }
    finish(true, "");
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace hcl::ib
