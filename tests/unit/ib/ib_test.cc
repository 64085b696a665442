// HCL's verbs transport in pieces: the port filter, speeds and fabrics,
// link selection, what PeerInfo carries, and the ports found on the fake
// verbs library (tests/ib), which emulates devices and queue pairs.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/unit/peer_examples.h"
#include "transports/ib/ib_device_filter.h"
#include "transports/ib/ib_mode.h"
#include "transports/link.h"
#ifdef HCL_FAKE_VERBS_LIBRARY
#include "transports/ib/ib_net.h"
#include "transports/ib/ib_ports.h"
#include "transports/ib/ib_queue_pair.h"
#include "transports/net_plugin/net_plugin_abi.h"
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

TEST(IbDeviceFilter, DevicesWithNoPortAdmittedAreNotOpened) {
  EXPECT_TRUE(DeviceFilter::parse("").admitsSomePortOf("mlx5_0"));
  const DeviceFilter ports = DeviceFilter::parse("mlx5_0:1");
  EXPECT_TRUE(ports.admitsSomePortOf("mlx5_0"));
  EXPECT_FALSE(ports.admitsSomePortOf("bnxt_re0"));
  const DeviceFilter out = DeviceFilter::parse("^mlx5_3,mlx5_1:2");
  EXPECT_FALSE(out.admitsSomePortOf("mlx5_3")) << "every port of mlx5_3 is left out";
  EXPECT_TRUE(out.admitsSomePortOf("mlx5_1")) << "only port 2 of mlx5_1 is left out";
  EXPECT_TRUE(out.admitsSomePortOf("mlx5_0"));
  EXPECT_FALSE(DeviceFilter::parse("=mlx5_1").admitsSomePortOf("mlx5_10"));
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
  PeerInfo p = hcl::testing::peerOnEthernet(rank, host);
  p.addresses[0].speedMbps = 25000;
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
  EXPECT_EQ(selectLink(peer(0, "a", {"roce:10.1.0.0/16"}), peer(1, "b", {"roce:10.1.0.0/16"})).nicKind, NicKind::Roce);
  EXPECT_EQ(selectLink(peer(0, "a", {"roce:10.1.0.0/16"}), peer(1, "b", {"roce:10.2.0.0/16"})).kind,
            TransportKind::Tcp)
      << "RoCE on other IP networks";
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
  EXPECT_EQ(fabricOf(true, gid), "roce:gid:fe800000000000010000000000000000") << "no IPv4 address: its own";
  ibv_gid v4{};
  v4.raw[10] = v4.raw[11] = 0xff;
  v4.raw[12] = 10;
  v4.raw[15] = 7;
  EXPECT_EQ(fabricOf(true, v4), "roce");
}

TEST(IbPorts, RoceIsPublishedByTheIpNetworkOfItsGid) {
  NetAddress eth;
  eth.ip = "10.1.0.7";
  eth.prefixLen = 16;
  eth.fabric = "10.1.0.0/16";
  IbPortSummary roce{"mlx5_0:1", "roce", true, "10.1.0.7", 100000};
  EXPECT_EQ(publishedFabric(roce, {eth}), "roce:10.1.0.0/16");
  eth.fabric.clear();
  EXPECT_EQ(publishedFabric(roce, {eth}), "roce:10.1.0.7/16");
  EXPECT_EQ(publishedFabric(roce, {}), "roce:10.1.0.7/32") << "an address no interface holds: alone";
  IbPortSummary ib{"mlx5_1:1", "ib:fe80:0000:0000:0000", false, "", 200000};
  EXPECT_EQ(publishedFabric(ib, {eth}), "ib:fe80:0000:0000:0000") << "InfiniBand keeps its subnet";
}

TEST(IbPorts, MissingLibraryIsNamed) {
  IbSettings s;
  s.library = "/nowhere/libibverbs-missing.so";
  std::string why;
  EXPECT_EQ(IbNet::open(s, &why), nullptr);
  EXPECT_NE(why.find("libibverbs-missing.so"), std::string::npos) << why;
}

TEST(IbWire, QueuePairInfoIsLittleEndianAtFixedOffsets) {
  QpInfo info;
  info.qpn = 0xabcdef;
  info.psn = 0x123456;
  info.lid = 0x0102;
  info.mtu = IBV_MTU_4096;
  info.ethernet = 1;
  for (uint8_t i = 0; i < 16; ++i) info.gid[i] = static_cast<uint8_t>(0xa0 + i);
  info.nonce = 0x1122334455667788;
  const auto wire = encodeQpInfo(info);
  const std::array<uint8_t, kQpInfoWireBytes> want{
      0x51, 0x4c, 0x43, 0x48, 0xef, 0xcd, 0xab, 0x00, 0x56, 0x34, 0x12, 0x00, 0x02, 0x01, IBV_MTU_4096, 1,
      0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  EXPECT_EQ(wire, want);
  const QpInfo back = decodeQpInfo(wire);
  EXPECT_EQ(back.magic, kQpInfoMagic);
  EXPECT_EQ(back.qpn, info.qpn);
  EXPECT_EQ(back.psn, info.psn);
  EXPECT_EQ(back.lid, info.lid);
  EXPECT_EQ(back.mtu, info.mtu);
  EXPECT_EQ(back.ethernet, info.ethernet);
  EXPECT_TRUE(std::equal(std::begin(back.gid), std::end(back.gid), std::begin(info.gid)));
  EXPECT_EQ(back.nonce, info.nonce);
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
    if (!ok) std::fprintf(stderr, "check failed: %s\n", why.c_str());
    std::exit(ok ? 0 : 1);
  }

  struct Listening {
    std::unique_ptr<IbNet> net;
    std::array<uint8_t, netabi::kHandleBytes> handle{};
    void* listenComm = nullptr;
  };
  // A network on the fake library listening on its first port, its handle
  // pointing at loopback.
  static Listening listenOnLoopback() {
    Listening l;
    std::string why;
    l.net = open("", &why);
    if (!l.net) finish(false, why);
    if (!l.net->listen(0, l.handle.data(), &l.listenComm).ok()) finish(false, "listen");
    if (!setHandleAddress(l.handle.data(), "127.0.0.1")) finish(false, "setHandleAddress");
    return l;
  }
  // One link to itself, connected and accepted within 10 s.
  static void connectToSelf(Listening& l, void** sendComm, void** recvComm) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!*sendComm || !*recvComm) {
      if (std::chrono::steady_clock::now() > end) finish(false, "no connection within 10 s");
      if (!*recvComm) {
        if (Status s = l.net->accept(l.listenComm, recvComm); !s.ok()) finish(false, "accept failed: " + s.message());
      }
      if (!*sendComm) {
        if (Status s = l.net->connect(0, l.handle.data(), sendComm); !s.ok()) finish(false, "connect: " + s.message());
      }
    }
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
    if (open("mlx5", &why) || why.find("fakeib0 left out by HCL_IB_HCA") == std::string::npos) {
      finish(false, "mlx5 should leave every device out before opening it: " + why);
    }
    if (open("=fakeib0:2", &why) || why.find("fakeib0:1 left out by HCL_IB_HCA") == std::string::npos ||
        why.find("fakeib2 left out by HCL_IB_HCA") == std::string::npos) {
      finish(false, "=fakeib0:2 should open fakeib0 only, and leave its port 1 out: " + why);
    }
    finish(true, "");
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}

// A connection that is not a peer's reaches a listener first: it is
// dropped, and the peer's connection after it is set up all the same.
TEST_F(FakeVerbs, StrayConnectionToAListenerIsDropped) {
  const auto check = [] {
    Listening l = listenOnLoopback();
    auto& net = l.net;
    auto& handle = l.handle;
    // What travels is little-endian at fixed offsets: "HCLI", the side port,
    // the address family and the address.
    const std::array<uint8_t, 4> magic{0x49, 0x4c, 0x43, 0x48};
    if (!std::equal(magic.begin(), magic.end(), handle.begin()) ||
        handle[4] + 256 * handle[5] != handleSidePort(handle.data()) || handle[6] != 4 || handle[8] != 127 ||
        handle[11] != 1) {
      finish(false, "the handle's bytes are not little-endian at their offsets");
    }
    const int stray = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(handleSidePort(handle.data()));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(stray, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) finish(false, "stray connect");
    std::array<uint8_t, 64> junk{};
    junk.fill(0x5a);
    if (::send(stray, junk.data(), junk.size(), 0) != static_cast<ssize_t>(junk.size())) finish(false, "stray send");
    void* sendComm = nullptr;
    void* recvComm = nullptr;
    connectToSelf(l, &sendComm, &recvComm);
    char byte = 0;
    if (::recv(stray, &byte, 1, 0) > 0) finish(false, "the stray connection was answered");  // closed or reset
    ::close(stray);
    const bool closed = net->closeSend(sendComm).ok() && net->closeRecv(recvComm).ok() &&
                        net->closeListen(l.listenComm).ok();
    finish(closed, "close");
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}

// Every acknowledgement is lost, four receives are posted and five sends
// go out; the receiver takes its four messages and closes. Its closing
// record settles exactly the first four sends as delivered, and the fifth
// fails.
TEST_F(FakeVerbs, ClosingRecordSettlesExactlyTheSendsItCounts) {
  const auto check = [] {
    ::setenv("HCL_FAKE_VERBS_LOSE_ACKS", "1", 1);
    Listening l = listenOnLoopback();
    auto& net = l.net;
    void* sendComm = nullptr;
    void* recvComm = nullptr;
    connectToSelf(l, &sendComm, &recvComm);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const auto late = [&] { return std::chrono::steady_clock::now() > end; };
    constexpr size_t kBytes = 64;
    std::vector<uint8_t> out(5 * kBytes, 7), in(4 * kBytes);
    void* sendMr = nullptr;
    void* recvMr = nullptr;
    if (!net->registerHost(sendComm, out.data(), out.size(), &sendMr).ok() ||
        !net->registerHost(recvComm, in.data(), in.size(), &recvMr).ok()) {
      finish(false, "register");
    }
    std::array<void*, 4> recvs{};
    std::array<void*, 5> sends{};
    for (size_t i = 0; i < recvs.size(); ++i) {
      if (!net->irecv(recvComm, in.data() + i * kBytes, kBytes, 9, recvMr, &recvs[i]).ok() || !recvs[i]) {
        finish(false, "irecv");
      }
    }
    for (size_t i = 0; i < sends.size(); ++i) {
      if (!net->isend(sendComm, out.data() + i * kBytes, kBytes, 9, sendMr, &sends[i]).ok() || !sends[i]) {
        finish(false, "isend");
      }
    }
    for (void* r : recvs) {
      for (bool done = false; !done;) {
        if (late()) finish(false, "the receives did not complete");
        if (!net->test(r, &done, nullptr).ok()) finish(false, "a receive failed");
      }
    }
    if (!net->closeRecv(recvComm).ok()) finish(false, "closeRecv");
    for (size_t i = 0; i < sends.size(); ++i) {
      bool done = false;
      Status s;
      while (!done && s.ok()) {
        if (late()) finish(false, "send " + std::to_string(i) + " neither completed nor failed");
        s = net->test(sends[i], &done, nullptr);
      }
      if (i < 4 && !s.ok()) finish(false, "send " + std::to_string(i) + " was delivered but failed: " + s.message());
      if (i == 4 && s.ok()) finish(false, "send 4 never arrived but succeeded");
    }
    const bool closed = net->closeSend(sendComm).ok() && net->deregister(nullptr, recvMr).ok() &&
                        net->deregister(nullptr, sendMr).ok() && net->closeListen(l.listenComm).ok();
    finish(closed, "close");
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}

TEST_F(FakeVerbs, RoceTakesAnIpv4Gid) {
  const auto check = [] {
    setenv("HCL_FAKE_VERBS_LINK_LAYER", "eth", 1);
    std::string why;
    auto net = open("", &why);
    if (!net) finish(false, why);
    if (net->ports().empty() || !net->ports()[0].ethernet || net->ports()[0].fabric != "roce" ||
        net->ports()[0].ipv4.rfind("127.0.", 0) != 0) {
      finish(false, "expected a RoCE port with the fake's IPv4 GID (127.0.x.y)");
    }
    // GIDs 1 and 2 hold one address, as RoCE v1 and v2; the library's
    // typed query tells them apart.
    if (net->ports()[0].gidIndex != 2) finish(false, "expected RoCE v2's GID 2");
    finish(true, "");
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace hcl::ib
