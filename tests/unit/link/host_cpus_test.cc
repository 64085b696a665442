#include "core/host_cpus.h"

#include <gtest/gtest.h>

#include <bit>

namespace hcl {
namespace {

PeerInfo onHost(int rank, const std::string& host, std::vector<uint64_t> mask) {
  PeerInfo p;
  p.rank = rank;
  p.hostId = host;
  p.cpuMask = std::move(mask);
  return p;
}

TEST(HostCpus, RanksPinnedToACpuEachAreNotOversubscribed) {
  const std::vector<PeerInfo> peers = {onHost(0, "h", {0b0001}), onHost(1, "h", {0b0010}),
                                       onHost(2, "h", {0b0100}), onHost(3, "h", {0b1000})};
  EXPECT_FALSE(hostOversubscribed(peers, "h"));
  EXPECT_FALSE(anyHostOversubscribed(peers));
}

TEST(HostCpus, MoreRanksThanTheUnionOfTheirCpus) {
  const std::vector<PeerInfo> peers = {onHost(0, "h", {0b11}), onHost(1, "h", {0b11}), onHost(2, "h", {0b01})};
  EXPECT_TRUE(hostOversubscribed(peers, "h"));
  // The same ranks with a third CPU between them fit.
  const std::vector<PeerInfo> fits = {onHost(0, "h", {0b11}), onHost(1, "h", {0b11}), onHost(2, "h", {0b100})};
  EXPECT_FALSE(hostOversubscribed(fits, "h"));
}

TEST(HostCpus, CountsCpusBeyondTheFirstWordAndOnlyTheHostAsked) {
  // CPU 0 and CPU 64 are two CPUs, not one.
  const std::vector<PeerInfo> peers = {onHost(0, "a", {1}), onHost(1, "a", {0, 1}), onHost(2, "b", {1}),
                                       onHost(3, "b", {1})};
  EXPECT_FALSE(hostOversubscribed(peers, "a"));
  EXPECT_TRUE(hostOversubscribed(peers, "b"));
  EXPECT_TRUE(anyHostOversubscribed(peers));
}

TEST(HostCpus, AnUnknownMaskDecidesNothing) {
  const std::vector<PeerInfo> peers = {onHost(0, "h", {1}), onHost(1, "h", {}), onHost(2, "h", {1})};
  EXPECT_FALSE(hostOversubscribed(peers, "h"));
}

// Pinned two per CPU, ranks that share a CPU differ in the top bit of
// their place, which recursive doubling's last round flips.
TEST(HostCpus, PairingOrderPutsRanksOnOneCpuInTheLastRounds) {
  const auto pinned = [](std::vector<int> cpuOfRank, const std::string& host = "h") {
    std::vector<PeerInfo> peers;
    for (size_t r = 0; r < cpuOfRank.size(); ++r) {
      peers.push_back(onHost(static_cast<int>(r), host, {uint64_t{1} << cpuOfRank[r]}));
    }
    return peers;
  };
  EXPECT_EQ(sharedCpuPairingOrder(pinned({0, 1, 1, 0})), (std::vector<int>{0, 1, 3, 2}));
  EXPECT_EQ(sharedCpuPairingOrder(pinned({0, 0, 1, 1})), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(sharedCpuPairingOrder(pinned({0, 1, 0, 1})), (std::vector<int>{0, 1, 2, 3}));
  // Four per CPU: the last two rounds stay on a CPU.
  EXPECT_EQ(sharedCpuPairingOrder(pinned({0, 1, 0, 1, 1, 0, 1, 0})), (std::vector<int>{0, 1, 2, 3, 5, 4, 7, 6}));
  // Two per mask of one CPU on each of two hosts.
  std::vector<PeerInfo> twoHosts = pinned({0, 0}, "a");
  for (PeerInfo p : pinned({0, 0}, "b")) {
    p.rank += 2;
    twoHosts.push_back(p);
  }
  EXPECT_EQ(sharedCpuPairingOrder(twoHosts), (std::vector<int>{0, 2, 1, 3}));
}

TEST(HostCpus, PairingOrderKeepsRankOrderOtherwise) {
  std::vector<PeerInfo> unpinned;
  for (int r = 0; r < 4; ++r) unpinned.push_back(onHost(r, "h", {0b11}));
  EXPECT_TRUE(sharedCpuPairingOrder(unpinned).empty());  // one group of every rank
  std::vector<PeerInfo> ownCpus;
  for (int r = 0; r < 4; ++r) ownCpus.push_back(onHost(r, "h", {uint64_t{1} << r}));
  EXPECT_TRUE(sharedCpuPairingOrder(ownCpus).empty());  // nothing shared
  std::vector<PeerInfo> uneven = {onHost(0, "h", {1}), onHost(1, "h", {1}), onHost(2, "h", {1}),
                                  onHost(3, "h", {2})};
  EXPECT_TRUE(sharedCpuPairingOrder(uneven).empty());
  std::vector<PeerInfo> six;
  for (int r = 0; r < 6; ++r) six.push_back(onHost(r, "h", {uint64_t{1} << (r % 3)}));
  EXPECT_TRUE(sharedCpuPairingOrder(six).empty());  // not a power of two
  std::vector<PeerInfo> unknown = {onHost(0, "h", {1}), onHost(1, "h", {}), onHost(2, "h", {2}),
                                   onHost(3, "h", {2})};
  EXPECT_TRUE(sharedCpuPairingOrder(unknown).empty());
}

TEST(HostCpus, ThisProcessSeesAtLeastOneCpu) {
  const std::vector<uint64_t> mask = currentCpuMask();
  ASSERT_FALSE(mask.empty());
  EXPECT_NE(mask.back(), 0u);  // no trailing zero words
  size_t cpus = 0;
  for (uint64_t w : mask) cpus += static_cast<size_t>(std::popcount(w));
  EXPECT_GE(cpus, 1u);
}

}  // namespace
}  // namespace hcl
