#include "collectives/plan/link_model.h"

#include <gtest/gtest.h>

#include "collectives/plan/topology_derive.h"

namespace hcl {
namespace {

TEST(LinkModelUnits, TimesAndBandwidths) {
  EXPECT_DOUBLE_EQ(parseTimeUs("2.5us"), 2.5);
  EXPECT_DOUBLE_EQ(parseTimeUs("1ms"), 1000);
  EXPECT_DOUBLE_EQ(parseTimeUs("7"), 7);
  EXPECT_LT(parseTimeUs("soon"), 0);
  EXPECT_DOUBLE_EQ(parseBandwidth("12.5GB/s"), 12500);
  EXPECT_DOUBLE_EQ(parseBandwidth("125Mbit/s"), 15.625);
  EXPECT_DOUBLE_EQ(parseBandwidth("1gbit"), 125);
  EXPECT_DOUBLE_EQ(parseBandwidth("800"), 800);
  EXPECT_LT(parseBandwidth("fast"), 0);
  EXPECT_DOUBLE_EQ(parseBandwidth("100Mbps"), 12.5);
  EXPECT_DOUBLE_EQ(parseBandwidth("1Gb/s"), 125);
  EXPECT_DOUBLE_EQ(parseBandwidth("1gb"), 125);
  EXPECT_DOUBLE_EQ(parseBandwidth("1GB"), 1000);
}

TEST(LinkModelFile, PatternsThatMatchNoClassAreRefused) {
  std::vector<LinkModelRule> rules;
  std::string error;
  for (const char* line : {"smh 1us 1GB/s\n", "SHM 1us 1GB/s\n", "net: 1us 1GB/s\n", "tcp* 1us 1GB/s\n"}) {
    EXPECT_FALSE(parseLinkModel(line, rules, error)) << line;
    EXPECT_NE(error.find("matches no link class"), std::string::npos) << error;
  }
  rules.clear();
  EXPECT_TRUE(parseLinkModel("* 1us 1GB/s\nn* 1us 1GB/s\nnet:* 1us 1GB/s\nnet:wan* 1us 1GB/s\nlocal 1us 1GB/s\n"
                             "sh* 1us 1GB/s\nnet:x 1us 1GB/s\n",
                             rules, error))
      << error;
  EXPECT_EQ(rules.size(), 7u);
}

TEST(LinkModelUnits, NonFiniteValuesAreRefused) {
  for (const char* text : {"nan", "inf", "nanus", "infms"}) EXPECT_LT(parseTimeUs(text), 0) << text;
  for (const char* text : {"nan", "inf", "nanGB/s"}) EXPECT_LT(parseBandwidth(text), 0) << text;
}

TEST(LinkModelFile, ParsesRulesAndComments) {
  std::vector<LinkModelRule> rules;
  std::string error;
  ASSERT_TRUE(parseLinkModel("# comment\n\nshm 0.5us 8GB/s\nnet:* 20us 1gbit  # trailing\nnet:wan 50us 125Mbit/s\n",
                             rules, error))
      << error;
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[1].pattern, "net:*");
  EXPECT_DOUBLE_EQ(rules[2].cost.alphaUs, 50);
  EXPECT_DOUBLE_EQ(rules[2].cost.bytesPerUs, 15.625);
}

TEST(LinkModelFile, BadLinesNameTheLine) {
  std::vector<LinkModelRule> rules;
  std::string error;
  EXPECT_FALSE(parseLinkModel("shm 1us 8GB/s\nnet:wan 50us\n", rules, error));
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_FALSE(parseLinkModel("net:wan 50us quick\n", rules, error));
  EXPECT_NE(error.find("bad bandwidth 'quick'"), std::string::npos) << error;
  EXPECT_FALSE(parseLinkModel("net:wan later 1GB/s\n", rules, error));
  EXPECT_NE(error.find("bad latency 'later'"), std::string::npos) << error;
  EXPECT_FALSE(parseLinkModel("shm nan 100MB/s\n", rules, error));
  EXPECT_NE(error.find("bad latency 'nan'"), std::string::npos) << error;
  EXPECT_FALSE(parseLinkModel("shm 1us inf\n", rules, error));
  EXPECT_NE(error.find("bad bandwidth 'inf'"), std::string::npos) << error;
}

TEST(LinkModelFile, LastMatchingRuleWins) {
  LinkGraph g;
  g.addClass("shm", {1, 6000}, true);
  g.addClass("net:wan", {25, 100}, false);
  g.addClass("net:cluster0", {25, 100}, false);
  std::vector<LinkModelRule> rules = {{"net:*", {20, 125}}, {"net:wan", {50, 15.625}}};
  applyLinkModel(rules, g);
  EXPECT_EQ(g.costs[0], (LinkCost{1, 6000}));
  EXPECT_EQ(g.costs[1], (LinkCost{50, 15.625}));
  EXPECT_EQ(g.costs[2], (LinkCost{20, 125}));
}

// K clusters of N ranks: `fast` inside a cluster, `slow` between clusters.
LinkGraph clusters(int k, int n, double fast, double slow) {
  LinkGraph g;
  g.nranks = k * n;
  const int f = g.addClass("net:fast", {20, fast}, false);
  const int s = g.addClass("net:wan", {50, slow}, false);
  const size_t size = static_cast<size_t>(g.nranks);
  g.classOf.assign(size * size, -1);
  for (int a = 0; a < g.nranks; ++a)
    for (int b = 0; b < g.nranks; ++b)
      if (a != b) g.classOf[static_cast<size_t>(a) * size + static_cast<size_t>(b)] = a / n == b / n ? f : s;
  return g;
}

TEST(LinkGraphWire, RoundTrip) {
  const LinkGraph g = clusters(2, 2, 125, 15.6);
  const auto bytes = g.serialize();
  LinkGraph h;
  ASSERT_TRUE(LinkGraph::deserialize(bytes.data(), bytes.size(), h));
  EXPECT_EQ(h.classNames, g.classNames);
  EXPECT_EQ(h.costs, g.costs);
  EXPECT_EQ(h.classOf, g.classOf);
  EXPECT_FALSE(LinkGraph::deserialize(bytes.data(), bytes.size() - 1, h));
}

TEST(DeriveTopology, ClustersBecomeOneLevel) {
  const Topology t = deriveTopology(clusters(2, 2, 125, 15.6));
  ASSERT_EQ(t.levels.size(), 1u);
  EXPECT_EQ(t.levels[0], (std::vector<int>{0, 0, 1, 1}));
}

TEST(DeriveTopology, UniformGraphIsFlat) {
  EXPECT_TRUE(deriveTopology(clusters(1, 5, 125, 125)).flat());
  EXPECT_TRUE(deriveTopology(clusters(3, 3, 125, 125)).flat());
}

TEST(DeriveTopology, HostsInsideFabricsGiveTwoLevels) {
  // 2 fabrics x 2 hosts x 2 ranks: shm inside a host, 100 inside a fabric, 10 across.
  LinkGraph g;
  g.nranks = 8;
  const int shm = g.addClass("shm", {1, 6000}, true);
  const int fab = g.addClass("net:fab", {20, 100}, false);
  const int wan = g.addClass("net:wan", {50, 10}, false);
  g.classOf.assign(64, -1);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) g.classOf[static_cast<size_t>(a * 8 + b)] = a / 2 == b / 2 ? shm : (a / 4 == b / 4 ? fab : wan);
  const Topology t = deriveTopology(g);
  ASSERT_EQ(t.levels.size(), 2u);
  EXPECT_EQ(t.levels[0], (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(t.levels[1], (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(DeriveTopology, InterleavedClustersAreFound) {
  LinkGraph g = clusters(2, 3, 125, 15.6);
  // Renumber so that cluster membership alternates: rank r is in cluster r % 2.
  LinkGraph h = g;
  const int n = 6;
  const auto old = [](int r) { return (r % 2) * 3 + r / 2; };
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) h.classOf[static_cast<size_t>(a * n + b)] = g.classOf[static_cast<size_t>(old(a) * n + old(b))];
  const Topology t = deriveTopology(h);
  ASSERT_EQ(t.levels.size(), 1u);
  EXPECT_EQ(t.levels[0], (std::vector<int>{0, 1, 0, 1, 0, 1}));
}

}  // namespace
}  // namespace hcl
