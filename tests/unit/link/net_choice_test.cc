// HCL_NET (NCCL_NET): the names it takes, the transports it leaves in play,
// and the check of the links chosen against it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/bootstrap/test_env.h"
#include "tests/unit/peer_examples.h"
#include "transports/net_choice.h"

namespace hcl {
namespace {

TEST(NetChoice, NcclsNamesAndHclsOwnInAnyCase) {
  EXPECT_EQ(parseNetRequest("", "HCL_NET").choice, NetChoice::Any);
  for (const char* socket : {"Socket", "socket", "TCP"}) EXPECT_EQ(parseNetRequest(socket, "HCL_NET").choice, NetChoice::Socket) << socket;
  for (const char* ib : {"IB", "ib", "verbs"}) EXPECT_EQ(parseNetRequest(ib, "HCL_NET").choice, NetChoice::Ib) << ib;
  for (const char* ofi : {"OFI", "libfabric"}) EXPECT_EQ(parseNetRequest(ofi, "HCL_NET").choice, NetChoice::Ofi) << ofi;
  const NetRequest plugin = parseNetRequest("AWS Libfabric", "NCCL_NET");
  EXPECT_EQ(plugin.choice, NetChoice::Plugin);
  EXPECT_EQ(plugin.name, "AWS Libfabric");
  EXPECT_EQ(plugin.variable, "NCCL_NET");
}

TEST(NetChoice, ReadUnderEitherName) {
  {
    test::ScopedEnv hcl("HCL_NET", std::nullopt), nccl("NCCL_NET", "IB");
    const NetRequest r = readNetRequest();
    EXPECT_EQ(r.choice, NetChoice::Ib);
    EXPECT_EQ(r.variable, "NCCL_NET");
  }
  test::ScopedEnv hcl("HCL_NET", "Socket"), nccl("NCCL_NET", "IB");
  EXPECT_EQ(readNetRequest().choice, NetChoice::Socket) << "HCL's name wins over NCCL's";
}

TEST(NetChoice, OnlyTheNamedNetworkStaysInPlay) {
  const NetRequest any = parseNetRequest("", "HCL_NET"), socket = parseNetRequest("Socket", "HCL_NET"),
                   ib = parseNetRequest("IB", "HCL_NET"), plugin = parseNetRequest("hcltest", "HCL_NET");
  for (TransportKind k : {TransportKind::Tcp, TransportKind::Ib, TransportKind::Ofi, TransportKind::NetPlugin}) {
    EXPECT_TRUE(netRequestAllows(any, k));
  }
  for (const NetRequest* r : {&socket, &ib, &plugin}) {
    EXPECT_TRUE(netRequestAllows(*r, TransportKind::Local)) << r->name;
    EXPECT_TRUE(netRequestAllows(*r, TransportKind::Shm)) << r->name;
  }
  EXPECT_TRUE(netRequestAllows(socket, TransportKind::Tcp));
  EXPECT_FALSE(netRequestAllows(socket, TransportKind::Ib));
  EXPECT_FALSE(netRequestAllows(socket, TransportKind::NetPlugin));
  EXPECT_TRUE(netRequestAllows(ib, TransportKind::Ib));
  EXPECT_FALSE(netRequestAllows(ib, TransportKind::Tcp));
  EXPECT_FALSE(netRequestAllows(ib, TransportKind::Ofi));
  EXPECT_TRUE(netRequestAllows(plugin, TransportKind::NetPlugin));
  EXPECT_FALSE(netRequestAllows(plugin, TransportKind::Ib));
  const NetRequest ofi = parseNetRequest("OFI", "NCCL_NET");
  EXPECT_TRUE(netRequestAllows(ofi, TransportKind::Ofi));
  EXPECT_TRUE(netRequestAllows(ofi, TransportKind::NetPlugin)) << "aws-ofi-nccl calls itself OFI under NCCL_NET=OFI";
  EXPECT_FALSE(netRequestAllows(ofi, TransportKind::Ib));
}

std::vector<Link> linksOf(std::vector<TransportKind> kinds) {
  std::vector<Link> links(kinds.size());
  for (size_t p = 0; p < kinds.size(); ++p) {
    links[p].kind = kinds[p];
    links[p].reason = "reason " + std::to_string(p);
  }
  return links;
}

TEST(NetChoice, EveryNetworkLinkMustTakeTheNamedNetwork) {
  const PeerInfo self = testing::peerOnEthernet(0, "h0");
  const std::vector<Link> links = linksOf({TransportKind::Local, TransportKind::Shm, TransportKind::Tcp});
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("", "HCL_NET"), self, links).ok());
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("Socket", "HCL_NET"), self, links).ok());
  const Status ib = checkRequestedNet(parseNetRequest("IB", "NCCL_NET"), self, links);
  ASSERT_FALSE(ib.ok());
  EXPECT_EQ(ib.code(), hclSystemError);
  EXPECT_NE(ib.message().find("NCCL_NET='IB'"), std::string::npos) << ib.message();
  EXPECT_NE(ib.message().find("link to rank 2 can only take Socket (TCP) (reason 2); this rank has no usable verbs "
                              "port"),
            std::string::npos)
      << ib.message();
  PeerInfo withPort = self;
  withPort.ibFabrics = {"ib:fe80"};
  const Status peerLacks = checkRequestedNet(parseNetRequest("IB", "NCCL_NET"), withPort, links);
  EXPECT_EQ(peerLacks.message().find("this rank has no"), std::string::npos) << "the peer is the one without";
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("IB", "HCL_NET"), self,
                                linksOf({TransportKind::Local, TransportKind::Ib, TransportKind::Shm}))
                  .ok());
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("IB", "HCL_NET"), self, linksOf({TransportKind::Local, TransportKind::Shm}))
                  .ok())
      << "a job within one host takes no network";
}

TEST(NetChoice, APeersRequestIsCheckedOnThisEndToo) {
  std::vector<PeerInfo> peers = {testing::peerOnEthernet(0, "h0"), testing::peerOnEthernet(1, "h1")};
  const std::vector<Link> tcp = linksOf({TransportKind::Local, TransportKind::Tcp});
  const NetRequest none = parseNetRequest("", "HCL_NET");
  EXPECT_TRUE(checkRequestedNet(none, peers[0], peers, tcp).ok());
  peers[1].netName = "IB";
  peers[1].netNameFrom = "NCCL_NET";
  const Status s = checkRequestedNet(none, peers[0], peers, tcp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 0: rank 1's NCCL_NET='IB', but the link between them can only take Socket (TCP)"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(checkRequestedNet(none, peers[0], peers, linksOf({TransportKind::Local, TransportKind::Ib})).ok());
}

TEST(NetChoice, APluginIsNamedByItsOwnName) {
  PeerInfo self = testing::peerOnEthernet(0, "h0");
  const std::vector<Link> links = linksOf({TransportKind::Local, TransportKind::NetPlugin});
  const Status none = checkRequestedNet(parseNetRequest("hcltest", "HCL_NET"), self, links);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.code(), hclInvalidUsage) << "as NCCL: a name that is no network";
  EXPECT_NE(none.message().find("no net plugin is loaded"), std::string::npos) << none.message();
  self.netPlugin = "HCLtest";
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("hcltest", "HCL_NET"), self, links).ok()) << "names match in any case";
  const Status other = checkRequestedNet(parseNetRequest("AWS Libfabric", "HCL_NET"), self, links);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.code(), hclInvalidUsage);
  EXPECT_NE(other.message().find("the net plugin loaded is 'HCLtest'"), std::string::npos) << other.message();
  // A plugin that calls itself OFI serves NCCL_NET=OFI, as aws-ofi-nccl does.
  self.netPlugin = "OFI";
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("OFI", "NCCL_NET"), self, links).ok());
  self.netPlugin = "Libfabric";
  EXPECT_FALSE(checkRequestedNet(parseNetRequest("OFI", "NCCL_NET"), self, links).ok())
      << "under another name it is not the network named";
  EXPECT_TRUE(checkRequestedNet(parseNetRequest("OFI", "NCCL_NET"), self,
                                linksOf({TransportKind::Local, TransportKind::Ofi}))
                  .ok());
}

}  // namespace
}  // namespace hcl
