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
