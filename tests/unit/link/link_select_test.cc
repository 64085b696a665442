// Per-pair transport and NIC choice on crafted peer infos.
#include <gtest/gtest.h>

#include "transports/link.h"

namespace hcl {
namespace {

NetAddress nic(std::string ifname, std::string ip, NicKind kind, uint32_t mbps, std::string fabric) {
  NetAddress a;
  a.ifname = std::move(ifname);
  a.ip = std::move(ip);
  a.port = 5000;
  a.prefixLen = 24;
  a.kind = kind;
  a.speedMbps = mbps;
  a.fabric = std::move(fabric);
  return a;
}

PeerInfo peer(int rank, std::string host, std::vector<NetAddress> nics) {
  PeerInfo p;
  p.rank = rank;
  p.hostId = std::move(host);
  p.pid = 100 + rank;
  p.processToken = 7000 + static_cast<uint64_t>(rank);
  p.addresses = std::move(nics);
  return p;
}

// The Holmes layout: an InfiniBand cluster and a RoCE cluster, 200 Gbit/s
// inside each, joined only by 25 Gbit/s Ethernet that every node has.
PeerInfo ibNode(int rank) {
  return peer(rank, "ib-node" + std::to_string(rank),
              {nic("eth0", "10.0.0." + std::to_string(rank + 10), NicKind::Ethernet, 25000, "ip:10.0.0.0/24"),
               nic("ib0", "192.168.1." + std::to_string(rank + 10), NicKind::Ib, 200000, "ib:fe80:0000:0000:0001")});
}
PeerInfo roceNode(int rank) {
  return peer(rank, "roce-node" + std::to_string(rank),
              {nic("eth0", "10.0.0." + std::to_string(rank + 10), NicKind::Ethernet, 25000, "ip:10.0.0.0/24"),
               nic("mlx0", "192.168.2." + std::to_string(rank + 10), NicKind::Roce, 200000, "ip:192.168.2.0/24")});
}

TEST(LinkSelect, SameProcessIsLocalAndSameHostIsShm) {
  PeerInfo a = ibNode(0), b = ibNode(1);
  b.hostId = a.hostId;
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Shm);
  EXPECT_EQ(selectLink(a, b).linkClass, "shm");
  b.pid = a.pid;
  b.processToken = a.processToken;
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Local);
  EXPECT_EQ(selectLink(a, b).linkClass, "local");
}

TEST(LinkSelect, ShmDisabledOnOneEndUsesTheNetwork) {
  PeerInfo a = ibNode(0), b = ibNode(1);
  b.hostId = a.hostId;
  b.shmEnabled = false;
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.kind, TransportKind::Tcp);
  EXPECT_NE(l.reason.find("HCL_SHM_DISABLE"), std::string::npos) << l.reason;
}

TEST(LinkSelect, HolmesInsideTheIbClusterUsesIb) {
  const Link l = selectLink(ibNode(0), ibNode(1));
  EXPECT_EQ(l.kind, TransportKind::Tcp);
  EXPECT_EQ(l.fabric, "ib:fe80:0000:0000:0001");
  EXPECT_EQ(l.nicKind, NicKind::Ib);
  EXPECT_EQ(l.listenerAddress, 1);   // rank 1's ib0
  EXPECT_EQ(l.connectorAddress, 1);  // rank 0's ib0
  EXPECT_EQ(l.speedMbps, 200000u);
  EXPECT_EQ(l.linkClass, "net:ib:fe80:0000:0000:0001");
}

TEST(LinkSelect, HolmesInsideTheRoceClusterUsesRoce) {
  const Link l = selectLink(roceNode(2), roceNode(3));
  EXPECT_EQ(l.nicKind, NicKind::Roce);
  EXPECT_EQ(l.fabric, "ip:192.168.2.0/24");
  EXPECT_EQ(l.listenerAddress, 1);
}

TEST(LinkSelect, HolmesAcrossClustersFallsBackToEthernet) {
  const Link l = selectLink(ibNode(0), roceNode(2));
  EXPECT_EQ(l.nicKind, NicKind::Ethernet);
  EXPECT_EQ(l.fabric, "ip:10.0.0.0/24");
  EXPECT_EQ(l.listenerAddress, 0);  // rank 2's eth0
  EXPECT_EQ(l.connectorAddress, 0);
  EXPECT_EQ(l.speedMbps, 25000u);
  EXPECT_NE(l.reason.find("eth0"), std::string::npos) << l.reason;
}

// Whichever end of a pair asks, the answer is the same.
void expectBothEndsAgree(const std::vector<PeerInfo>& all) {
  for (const auto& a : all) {
    for (const auto& b : all) {
      if (a.rank == b.rank) continue;
      const Link ab = selectLink(a, b), ba = selectLink(b, a);
      EXPECT_EQ(ab.kind, ba.kind);
      EXPECT_EQ(ab.listenerAddress, ba.listenerAddress);
      EXPECT_EQ(ab.connectorAddress, ba.connectorAddress);
      EXPECT_EQ(ab.connectorOfiEndpoint, ba.connectorOfiEndpoint);
      EXPECT_EQ(ab.listenerOfiEndpoint, ba.listenerOfiEndpoint);
      EXPECT_EQ(ab.linkClass, ba.linkClass);
    }
  }
}

TEST(LinkSelect, BothEndsAgree) { expectBothEndsAgree({ibNode(0), ibNode(1), roceNode(2), roceNode(3)}); }

TEST(LinkSelect, FasterSharedFabricWinsAndLabelsMustMatch) {
  // Both NICs are Ethernet; the 1 Gbit/s cluster fabric beats the 125 Mbit/s WAN.
  const PeerInfo a = peer(0, "c0n0", {nic("wan0", "10.20.0.1", NicKind::Ethernet, 125, "wan"),
                                       nic("fab0", "10.10.0.1", NicKind::Ethernet, 1000, "cluster0")});
  const PeerInfo b = peer(1, "c0n1", {nic("wan0", "10.20.0.2", NicKind::Ethernet, 125, "wan"),
                                       nic("fab0", "10.10.0.2", NicKind::Ethernet, 1000, "cluster0")});
  const PeerInfo c = peer(2, "c1n0", {nic("wan0", "10.20.1.1", NicKind::Ethernet, 125, "wan"),
                                       nic("fab0", "10.10.1.1", NicKind::Ethernet, 1000, "cluster1")});
  EXPECT_EQ(selectLink(a, b).fabric, "cluster0");
  EXPECT_EQ(selectLink(a, b).listenerAddress, 1);
  EXPECT_EQ(selectLink(a, c).fabric, "wan");
  EXPECT_EQ(selectLink(a, c).listenerAddress, 0);
  EXPECT_EQ(selectLink(b, c).linkClass, "net:wan");
}

TEST(LinkSelect, RdmaBeatsAFasterLookingEthernet) {
  const PeerInfo a = peer(0, "h0", {nic("eth0", "10.0.0.1", NicKind::Ethernet, 400000, "lan"),
                                     nic("ib0", "10.1.0.1", NicKind::Ib, 100000, "ibnet")});
  const PeerInfo b = peer(1, "h1", {nic("eth0", "10.0.0.2", NicKind::Ethernet, 400000, "lan"),
                                     nic("ib0", "10.1.0.2", NicKind::Ib, 100000, "ibnet")});
  EXPECT_EQ(selectLink(a, b).fabric, "ibnet");
}

TEST(LinkSelect, EqualCandidatesAreBrokenDeterministically) {
  const PeerInfo a = peer(0, "h0", {nic("b0", "10.2.0.1", NicKind::Ethernet, 0, "beta"),
                                     nic("a0", "10.1.0.1", NicKind::Ethernet, 0, "alpha")});
  const PeerInfo b = peer(1, "h1", {nic("a0", "10.1.0.2", NicKind::Ethernet, 0, "alpha"),
                                     nic("b0", "10.2.0.2", NicKind::Ethernet, 0, "beta")});
  EXPECT_EQ(selectLink(a, b).fabric, "alpha");
  EXPECT_EQ(selectLink(b, a).fabric, "alpha");
}

TEST(LinkSelect, NoSharedFabricTriesTheFirstAddressAndSaysSo) {
  const PeerInfo a = peer(0, "h0", {nic("eth0", "10.0.0.1", NicKind::Ethernet, 1000, "x")});
  const PeerInfo b = peer(1, "h1", {nic("eth0", "10.9.0.1", NicKind::Ethernet, 1000, "y")});
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.listenerAddress, 0);
  EXPECT_NE(l.reason.find("no shared fabric"), std::string::npos) << l.reason;
}

// Podman's bridge is 10.88.0.1/16 on every host: its label sorts before
// the real network's, but connecting to it reaches the connector itself.
TEST(LinkSelect, AnAddressBothHostsHaveIsNotTheWayBetweenThem) {
  const PeerInfo a = peer(0, "h0", {nic("eth0", "192.168.1.10", NicKind::Ethernet, 0, "ip:192.168.1.0/24"),
                                     nic("podman0", "10.88.0.1", NicKind::Ethernet, 0, "ip:10.88.0.0/16")});
  const PeerInfo b = peer(1, "h1", {nic("eth0", "192.168.1.11", NicKind::Ethernet, 0, "ip:192.168.1.0/24"),
                                     nic("podman0", "10.88.0.1", NicKind::Ethernet, 0, "ip:10.88.0.0/16")});
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.fabric, "ip:192.168.1.0/24");
  EXPECT_EQ(l.listenerAddress, 0);
  // With no shared label either, the fallback skips it too.
  PeerInfo c = b;
  c.addresses = {nic("podman0", "10.88.0.1", NicKind::Ethernet, 0, "p"),
                 nic("eth0", "192.168.1.11", NicKind::Ethernet, 0, "q")};
  EXPECT_EQ(selectLink(a, c).listenerAddress, 1);
  // On one host (shared memory off) every address of the peer is its own and usable.
  PeerInfo d = b;
  d.hostId = a.hostId;
  d.shmEnabled = false;
  d.addresses = {nic("podman0", "10.88.0.1", NicKind::Ethernet, 0, "ip:10.88.0.0/16")};
  EXPECT_EQ(selectLink(a, d).listenerAddress, 0);
}

OfiEndpointInfo ofiEndpoint(std::string provider, std::string fabric, int nic, uint8_t tag) {
  return {std::move(provider), std::move(fabric), nic, {tag, 0xab}};
}

// Emulated hosts (HCL_HOSTID) on one machine publish the same addresses, and
// those do reach the peer: the two share a kernel and network namespace.
// Containers on one machine with namespaces of their own do not.
TEST(LinkSelect, EmulatedHostsOnOneNetworkStackShareItsFabrics) {
  PeerInfo a = peer(0, "host0", {nic("eth0", "192.0.2.2", NicKind::Ethernet, 0, "ip:192.0.2.0/24")});
  PeerInfo b = peer(1, "host1", {nic("eth0", "192.0.2.2", NicKind::Ethernet, 0, "ip:192.0.2.0/24")});
  a.networkStack = b.networkStack = "boot-1 net:[4026531840]";
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.kind, TransportKind::Tcp);
  EXPECT_EQ(l.listenerAddress, 0);
  EXPECT_EQ(l.connectorAddress, 0) << "a shared fabric, so libfabric can take the NICs it chose: " << l.reason;
  EXPECT_NE(l.reason.find("fabric 'ip:192.0.2.0/24'"), std::string::npos) << l.reason;
  for (PeerInfo* p : {&a, &b}) p->ofiEndpoints = {ofiEndpoint("tcp;ofi_rxm", "192.0.2.0/24", 0, 1)};
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Ofi);
  b.networkStack = "boot-1 net:[4026532000]";
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp) << "another namespace: the address is its own";
  EXPECT_EQ(selectLink(a, b).connectorAddress, -1);
  a.networkStack = b.networkStack = "";
  EXPECT_EQ(selectLink(a, b).connectorAddress, -1) << "unknown stacks are taken for different ones";
}

TEST(LinkSelect, LibfabricTakesTheEndpointsOnTheNicsTheLinkChose) {
  PeerInfo a = ibNode(0), b = ibNode(1);
  for (PeerInfo* p : {&a, &b}) {
    p->ofiEndpoints = {ofiEndpoint("tcp;ofi_rxm", "10.0.0.0/24", 0, 1), ofiEndpoint("verbs;ofi_rxm", "IB-0xfe80", 1, 2)};
  }
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.kind, TransportKind::Ofi);
  EXPECT_EQ(l.connectorOfiEndpoint, 1) << "the InfiniBand NIC's endpoint";
  EXPECT_EQ(l.listenerOfiEndpoint, 1);
  // The NIC facts and the cost model's class stay those of the fabric.
  EXPECT_EQ(l.linkClass, "net:ib:fe80:0000:0000:0001");
  EXPECT_EQ(l.nicKind, NicKind::Ib);
  EXPECT_NE(l.reason.find("libfabric provider 'verbs;ofi_rxm', fabric 'IB-0xfe80'"), std::string::npos) << l.reason;
  EXPECT_EQ(selectLink(b, a).connectorOfiEndpoint, 1);
}

// Two clusters whose nodes share a fast fabric inside each and a WAN that
// every node has: libfabric endpoints on both NICs, each on its subnet.
TEST(LinkSelect, LibfabricFollowsTheFabricChoiceAcrossClusters) {
  const auto node = [](int rank, int cluster) {
    PeerInfo p = peer(rank, "c" + std::to_string(cluster) + "n" + std::to_string(rank),
                      {nic("fab0", "10.10." + std::to_string(cluster) + "." + std::to_string(rank + 1),
                           NicKind::Ethernet, 10000, "cluster" + std::to_string(cluster)),
                       nic("wan0", "10.20." + std::to_string(cluster) + "." + std::to_string(rank + 1),
                           NicKind::Ethernet, 2000, "wan")});
    // The WAN endpoint first, as libfabric may list it.
    p.ofiEndpoints = {ofiEndpoint("tcp;ofi_rxm", "10.20.0.0/16", 1, 1),
                      ofiEndpoint("tcp;ofi_rxm", "10.10." + std::to_string(cluster) + ".0/24", 0, 2)};
    return p;
  };
  const Link inside = selectLink(node(0, 0), node(1, 0));
  EXPECT_EQ(inside.kind, TransportKind::Ofi);
  EXPECT_EQ(inside.fabric, "cluster0");
  EXPECT_EQ(inside.connectorOfiEndpoint, 1) << "the fab0 endpoint, not the WAN's";
  EXPECT_EQ(inside.listenerOfiEndpoint, 1);
  const Link across = selectLink(node(0, 0), node(2, 1));
  EXPECT_EQ(across.kind, TransportKind::Ofi);
  EXPECT_EQ(across.fabric, "wan");
  EXPECT_EQ(across.connectorOfiEndpoint, 0);
  EXPECT_EQ(across.listenerOfiEndpoint, 0);
  expectBothEndsAgree({node(0, 0), node(1, 0), node(2, 1), node(3, 1)});
}

TEST(LinkSelect, PairsWithNoSharedFabricLabelStayOnTcp) {
  PeerInfo a = peer(0, "h0", {nic("eth0", "10.0.0.1", NicKind::Ethernet, 0, "left")});
  PeerInfo b = peer(1, "h1", {nic("eth0", "10.0.1.1", NicKind::Ethernet, 0, "right")});
  a.ofiEndpoints = {ofiEndpoint("tcp;ofi_rxm", "10.0.0.0/24", 0, 1)};
  b.ofiEndpoints = {ofiEndpoint("tcp;ofi_rxm", "10.0.1.0/24", 0, 1)};
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.kind, TransportKind::Tcp) << "no NIC pair was chosen, so no endpoint pair either";
  EXPECT_EQ(l.connectorOfiEndpoint, -1);
}

TEST(LinkSelect, LibfabricNeedsEndpointsOnBothChosenNics) {
  PeerInfo a = ibNode(0), b = ibNode(1);
  a.ofiEndpoints = {ofiEndpoint("verbs;ofi_rxm", "IB-0xfe80", 1, 1)};
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp) << "the peer opened none";
  b.ofiEndpoints = {ofiEndpoint("verbs;ofi_rxm", "IB-0xfe80", 0, 1)};
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp) << "the peer's is on its Ethernet NIC";
  b.ofiEndpoints = {ofiEndpoint("efa", "IB-0xfe80", 1, 1)};
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp) << "another provider";
  b.ofiEndpoints = {ofiEndpoint("verbs;ofi_rxm", "IB-0xfe81", 1, 1)};
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp) << "another fabric";
  // Shared memory comes first on one host; libfabric only with it off.
  b.ofiEndpoints = {ofiEndpoint("verbs;ofi_rxm", "IB-0xfe80", 1, 1)};
  b.hostId = a.hostId;
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Shm);
  b.shmEnabled = false;
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Ofi);
}

TEST(LinkSelect, EndpointsTiedToNoNicMatchOnProviderAndFabric) {
  PeerInfo a = ibNode(0), b = ibNode(1);
  a.ofiEndpoints = {ofiEndpoint("efa", "efa-direct", -1, 1)};
  b.ofiEndpoints = {ofiEndpoint("efa", "efa-direct", -1, 1)};
  const Link l = selectLink(a, b);
  EXPECT_EQ(l.kind, TransportKind::Ofi);
  EXPECT_EQ(l.connectorOfiEndpoint, 0);
  b.ofiEndpoints[0].fabric = "efa-other";
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp);
}

TEST(LinkSelect, LibfabricShmProviderOnlyWithinAHostAndAcrossProcesses) {
  PeerInfo a = ibNode(0), b = ibNode(1);
  a.shmEnabled = b.shmEnabled = false;
  a.ofiEndpoints = b.ofiEndpoints = {ofiEndpoint("shm", "shm", -1, 1)};
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp);
  b.hostId = a.hostId;
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Ofi);
  // Not between endpoints of one process: libfabric 1.17's shm provider crashes there on a close.
  b.pid = a.pid;
  b.processToken = a.processToken;
  EXPECT_EQ(selectLink(a, b).kind, TransportKind::Tcp);
}

TEST(PeerInfoWire, NicFactsSurviveTheRoundTrip) {
  PeerInfo p = roceNode(3);
  p.cpuMask = {0x5, 0, 0x8000000000000000ull};
  p.networkStack = "boot-7 net:[4026531840]";
  p.netName = "IB";
  p.netNameFrom = "config->netName";
  const auto bytes = p.serialize();
  PeerInfo q;
  ASSERT_TRUE(PeerInfo::deserialize(bytes.data(), bytes.size(), q));
  EXPECT_EQ(q.networkStack, p.networkStack);
  EXPECT_EQ(q.netName, "IB");
  EXPECT_EQ(q.netNameFrom, "config->netName");
  EXPECT_EQ(q.hostId, p.hostId);
  ASSERT_EQ(q.addresses.size(), 2u);
  EXPECT_EQ(q.addresses[1].kind, NicKind::Roce);
  EXPECT_EQ(q.addresses[1].speedMbps, 200000u);
  EXPECT_EQ(q.addresses[1].fabric, "ip:192.168.2.0/24");
  EXPECT_EQ(q.cpuMask, p.cpuMask);
  EXPECT_TRUE(q.ofiEndpoints.empty());
  p.ofiEndpoints = {ofiEndpoint("efa", "efa-direct", -1, 7), ofiEndpoint("verbs;ofi_rxm", "IB-0xfe80", 1, 8)};
  const auto withOfi = p.serialize();
  ASSERT_TRUE(PeerInfo::deserialize(withOfi.data(), withOfi.size(), q));
  ASSERT_EQ(q.ofiEndpoints.size(), 2u);
  EXPECT_EQ(q.ofiEndpoints[0].provider, "efa");
  EXPECT_EQ(q.ofiEndpoints[0].fabric, "efa-direct");
  EXPECT_EQ(q.ofiEndpoints[0].nic, -1);
  EXPECT_EQ(q.ofiEndpoints[1].nic, 1);
  EXPECT_EQ(q.ofiEndpoints[1].address, p.ofiEndpoints[1].address);
  p.ofiEndpoints[1].nic = 2;  // past the rank's two NICs
  const auto badNic = p.serialize();
  EXPECT_FALSE(PeerInfo::deserialize(badNic.data(), badNic.size(), q));
  p.ofiEndpoints[1].nic = 1;
  p.ofiEndpoints[1].address.clear();
  const auto noAddress = p.serialize();
  EXPECT_FALSE(PeerInfo::deserialize(noAddress.data(), noAddress.size(), q));
  auto truncated = bytes;
  truncated.pop_back();
  EXPECT_FALSE(PeerInfo::deserialize(truncated.data(), truncated.size(), q));
}

}  // namespace
}  // namespace hcl
