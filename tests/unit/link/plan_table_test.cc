// The cost model: schedule replay, the plan table and its wire format.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/plan/plan.h"
#include "collectives/plan/schedule_timing.h"
#include "collectives/plan/step_pool.h"
#include "collectives/plan/topology_derive.h"
#include "collectives/plan/topology_text.h"
#include "core/comm_plan.h"

namespace hcl {
namespace {

LinkGraph uniform(int n, LinkCost cost) {
  LinkGraph g;
  g.nranks = n;
  const int c = g.addClass("net:x", cost, false);
  g.classOf.assign(static_cast<size_t>(n * n), c);
  for (int r = 0; r < n; ++r) g.classOf[static_cast<size_t>(r * n + r)] = -1;
  return g;
}

std::vector<Schedule> schedulesFor(const Planner& p, CollKind kind, int n, size_t count, size_t chunk = 512 * 1024) {
  std::vector<Schedule> out;
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.kind = kind;
    a.rank = r;
    a.nranks = n;
    a.count = count;
    a.type = hclFloat32;
    a.chunkBytes = chunk;
    out.push_back(p.plan(a));
  }
  return out;
}

TEST(ScheduleTiming, RingAllReduceMatchesTheAlphaBetaFormula) {
  const int n = 4;
  const size_t bytes = 16 << 20;
  LinkGraph g = uniform(n, {10, 100});
  g.reduceBytesPerUs = 1e12;  // reductions free, to compare with the formula
  const ScheduleEstimate e = estimateSchedules(schedulesFor(Planner("allreduce:ring"), CollKind::AllReduce, n, bytes / 4, 1 << 30), g);
  ASSERT_TRUE(e.valid);
  // 2(n-1) steps, each moving bytes/n over a link: 2(n-1)(alpha + bytes/(n beta)).
  const double formula = 2.0 * (n - 1) * (10 + static_cast<double>(bytes) / n / 100);
  EXPECT_NEAR(e.us, formula, formula * 0.01);
  ASSERT_EQ(e.classesUsed.size(), 1u);
  EXPECT_TRUE(e.classesUsed[0]);
}

TEST(ScheduleTiming, SlowerLinksCostMore) {
  const auto s = schedulesFor(Planner("allreduce:ring"), CollKind::AllReduce, 3, 1 << 20);
  const ScheduleEstimate fast = estimateSchedules(s, uniform(3, {10, 1000}));
  const ScheduleEstimate slow = estimateSchedules(s, uniform(3, {10, 100}));
  ASSERT_TRUE(fast.valid && slow.valid);
  EXPECT_GT(slow.us, 5 * fast.us);
}

TEST(ScheduleTiming, MismatchedSchedulesAreInvalid) {
  auto s = schedulesFor(Planner("allreduce:ring"), CollKind::AllReduce, 3, 1000);
  s[1] = schedulesFor(Planner(), CollKind::AllGather, 3, 7)[1];
  EXPECT_FALSE(estimateSchedules(s, uniform(3, {10, 100})).valid);
}

TEST(PlanTable, BucketsArePowersOfTwo) {
  EXPECT_EQ(PlanTable::bucketFor(0), 0);
  EXPECT_EQ(PlanTable::bucketFor(1), 0);
  EXPECT_EQ(PlanTable::bucketFor(2), 1);
  EXPECT_EQ(PlanTable::bucketFor(3), 2);
  EXPECT_EQ(PlanTable::bucketFor(4096), 12);
  EXPECT_EQ(PlanTable::bucketFor(4097), 13);
  EXPECT_EQ(PlanTable::bucketFor(size_t{1} << 40), PlanTable::kBuckets - 1);
}

TEST(PlanTable, OverrideRestrictsTheChoiceAndTheTableIsComplete) {
  const Planner planner("allreduce:ring");
  const PlanTable t = planner.buildTable(uniform(4, {10, 100}), {}, 512 * 1024);
  for (size_t bytes : {size_t{8}, size_t{4096}, size_t{1} << 20, size_t{1} << 26}) {
    const PlanChoice* c = t.find(CollKind::AllReduce, bytes);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->algorithm, "ring");
    EXPECT_GT(c->estimatedUs, 0);
    EXPECT_EQ(c->linkClasses, (std::vector<std::string>{"net:x"}));
    EXPECT_NE(c->candidates.find("ring"), std::string::npos);
    EXPECT_EQ(c->candidates.find("rd "), std::string::npos) << "rd was excluded: " << c->candidates;
    ASSERT_NE(t.find(CollKind::Broadcast, bytes), nullptr);
    EXPECT_FALSE(t.find(CollKind::Broadcast, bytes)->algorithm.empty());
  }
  EXPECT_EQ(t.find(CollKind::SendRecv, 8), nullptr);
}

TEST(PlanTable, AForcedAlgorithmRunsWhereverItCanAndTheAddedDefaultOnlyBeyond) {
  // rd runs up to 16 KiB; the ring HCL adds for larger messages must not win
  // below that on price.
  const Planner planner("allreduce:rd");
  const PlanTable t = planner.buildTable(uniform(3, {10, 100}), {}, 512 * 1024);
  for (size_t bytes : {size_t{8}, size_t{2048}, size_t{4096}, size_t{16384}}) {
    const PlanChoice* c = t.find(CollKind::AllReduce, bytes);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->algorithm, "rd") << bytes << " bytes, candidates: " << c->candidates;
    EXPECT_EQ(c->candidates.find("ring"), std::string::npos) << c->candidates;
  }
  for (size_t bytes : {size_t{16385}, size_t{1} << 20}) {
    const PlanChoice* c = t.find(CollKind::AllReduce, bytes);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->algorithm, "ring") << bytes;
  }
}

// The table follows the shared-CPU admissions: on AMD the window all-reduce
// starts at 32 KiB where ranks share CPUs, at 256 KiB where they do not.
TEST(PlanTable, WindowWhereRanksShareCpusFollowsTheFamilyAdmission) {
  const auto choice = [](bool sharedCpus, size_t bytes) {
    Planner planner;
    planner.setPeerAccess(true);
    planner.setCpuFamily(CpuFamily::Amd);
    planner.setSharedCpus(sharedCpus);
    const PlanTable t = planner.buildTable(uniform(4, {1, 6000}), {}, 512 * 1024);
    const PlanChoice* c = t.find(CollKind::AllReduce, bytes);
    return c ? c->algorithm : std::string("none");
  };
  EXPECT_EQ(choice(true, 64 * 1024), "window");
  EXPECT_EQ(choice(true, size_t{1} << 20), "window");
  EXPECT_NE(choice(false, 64 * 1024), "window");
  EXPECT_EQ(choice(false, size_t{1} << 20), "window");
}

// The table prices the schedules plan() will run: where ranks share CPUs the
// window all-reduce of 4 ranks takes smaller slices, so more rounds of
// messages, and its estimate is higher.
TEST(PlanTable, PricesTheScheduleForRanksThatShareCpus) {
  const auto estimate = [](bool sharedCpus) {
    Planner planner;
    planner.setPeerAccess(true);
    planner.setCpuFamily(CpuFamily::Amd);
    planner.setSharedCpus(sharedCpus);
    const PlanTable t = planner.buildTable(uniform(4, {1, 6000}), {}, 512 * 1024);
    const PlanChoice* c = t.find(CollKind::AllReduce, size_t{4} << 20);
    EXPECT_NE(c, nullptr);
    if (c == nullptr) return 0.0;
    EXPECT_EQ(c->algorithm, "window");
    return c->estimatedUs;
  };
  EXPECT_GT(estimate(true), estimate(false));
}

// Where the default reaches peers' buffers (one host), it is chosen
// whatever the model says, so only it is priced; where an override leaves
// it out, the others are priced as before. The estimate is the default's
// own either way, and the same as when every candidate was priced.
TEST(PlanTable, ADefaultThatReachesPeersIsTheOnlyOnePriced) {
  Planner planner;
  planner.setPeerAccess(true);
  const PlanTable t = planner.buildTable(uniform(4, {1, 6000}), {}, 512 * 1024);
  const PlanChoice* c = t.find(CollKind::AllReduce, size_t{4} << 20);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->algorithm == "window" || c->algorithm == "direct") << c->algorithm;
  EXPECT_EQ(c->candidates.rfind(c->algorithm + " ", 0), 0u) << c->candidates;
  EXPECT_NE(c->candidates.find("the others are not priced"), std::string::npos) << c->candidates;
  EXPECT_EQ(c->candidates.find("ring"), std::string::npos) << c->candidates;

  Planner chosenOnly("allreduce:" + c->algorithm);
  chosenOnly.setPeerAccess(true);
  std::vector<Schedule> schedules;
  for (int r = 0; r < 4; ++r) {
    CollArgs a;
    a.kind = CollKind::AllReduce;
    a.rank = r;
    a.nranks = 4;
    a.count = (size_t{4} << 20) / 4;
    a.chunkBytes = 512 * 1024;
    schedules.push_back(chosenOnly.plan(a));
  }
  const ScheduleEstimate direct = estimateSchedules(schedules, uniform(4, {1, 6000}));
  ASSERT_TRUE(direct.valid);
  EXPECT_DOUBLE_EQ(c->estimatedUs, direct.us);

  Planner overridden("allreduce:ring,rd");
  overridden.setPeerAccess(true);
  const PlanTable o = overridden.buildTable(uniform(4, {1, 6000}), {}, 512 * 1024);
  const PlanChoice* oc = o.find(CollKind::AllReduce, size_t{4} << 20);
  ASSERT_NE(oc, nullptr);
  EXPECT_EQ(oc->algorithm, "ring");
  EXPECT_EQ(oc->candidates.find("not priced"), std::string::npos) << oc->candidates;
}

TEST(PlanOverride, NamesThatSelectNothingAreReported) {
  EXPECT_TRUE(overrideProblems("").empty());
  EXPECT_TRUE(overrideProblems("ring,tree;allreduce:hier").empty());
  EXPECT_TRUE(overrideProblems("Ring,TREE").empty());
  EXPECT_TRUE(overrideProblems("^ring;allgather:rhd").empty());
  EXPECT_TRUE(overrideProblems(" allreduce : tree ; broadcast:^ring").empty());
  const auto has = [](const std::vector<std::string>& problems, const std::string& text) {
    for (const auto& p : problems)
      if (p.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has(overrideProblems("ring,rnig"), "'rnig' is not an algorithm"));
  EXPECT_TRUE(has(overrideProblems("ring,^tree"), "'^tree' is not an algorithm"));
  EXPECT_TRUE(has(overrideProblems("allreduc:tree"), "'allreduc' is not a collective"));
  EXPECT_TRUE(has(overrideProblems("allreduce=tree"), "'allreduce=tree' is not an algorithm"));
  EXPECT_TRUE(has(overrideProblems("allgather:rd"), "'rd' is not an algorithm of allgather"));
  EXPECT_EQ(overrideProblems("rnig;allreduc:tree").size(), 2u);
}

TEST(PlanOverride, SpacesAroundTheColonAreAllowed) {
  EXPECT_STREQ(Planner("allreduce : tree").algorithmFor(CollKind::AllReduce, 1 << 20), "tree");
  EXPECT_STREQ(Planner(" allreduce:tree ").algorithmFor(CollKind::AllReduce, 1 << 20), "tree");
}

TEST(PlanTable, TheTableDrivesThePlannerEvenAgainstItsOwnOverride) {
  // Rank 0 allowed only ring; a rank whose own HCL_ALGO says rd still runs ring.
  auto table = std::make_shared<PlanTable>(Planner("allreduce:ring").buildTable(uniform(2, {10, 100}), {}, 512 * 1024));
  Planner other("allreduce:rd");
  EXPECT_STREQ(other.algorithmFor(CollKind::AllReduce, 64), "rd");
  other.setTable(table);
  EXPECT_STREQ(other.algorithmFor(CollKind::AllReduce, 64), "ring");
}

TEST(PlanTable, ACallThatMayNotReachPeersRunsTheTablesOtherChoiceWhateverTheRanksOverride) {
  // PreMulSum cannot use the peer-access algorithms the table picks on one
  // host; what runs instead comes from the table too, so ranks whose own
  // HCL_ALGO differ still run the same algorithm.
  Planner builder;
  builder.setPeerAccess(true);
  auto table = std::make_shared<PlanTable>(builder.buildTable(uniform(2, {10, 100}), {}, 512 * 1024));
  CollArgs a;
  a.kind = CollKind::AllReduce;
  a.nranks = 2;
  a.type = hclFloat32;
  a.count = size_t{1} << 18;
  a.chunkBytes = 512 * 1024;
  a.rankDependentLoad = true;
  const PlanChoice* c = table->find(a.kind, a.count * 4);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->algorithm, "direct") << "the case this test is about: a peer-access choice";
  ASSERT_FALSE(c->withoutPeerAccess.empty());
  for (const char* own : {"", "allreduce:tree", "allreduce:^ring", "allreduce:rd"}) {
    Planner rank(own);
    rank.setPeerAccess(true);
    rank.setTable(table);
    EXPECT_EQ(rank.algorithmFor(a), c->withoutPeerAccess) << "HCL_ALGO '" << own << "'";
  }
}

// Hosts of `perHost` ranks: a fast class inside each, a slow one between.
LinkGraph hosts(int n, int perHost) {
  LinkGraph g;
  g.nranks = n;
  const int inside = g.addClass("shm", {1, 6000}, true);
  const int between = g.addClass("net:x", {25, 1000}, false);
  g.classOf.assign(static_cast<size_t>(n * n), between);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) g.classOf[static_cast<size_t>(a * n + b)] = -1;
      else if (a / perHost == b / perHost) g.classOf[static_cast<size_t>(a * n + b)] = inside;
    }
  }
  return g;
}

// Above 32 ranks the odd buckets between two alike choices are not
// priced; each takes the choice the pricing would have made, with an
// estimate between its neighbours'.
TEST(PlanTable, LargeCommunicatorsSkipOddBucketsBetweenAlikeChoices) {
  const int n = Planner::kPricedEveryBucketUpTo + 8;
  const LinkGraph g = hosts(n, 8);
  const Topology topo = deriveTopology(g);
  const Planner planner;
  const PlanTable t = planner.buildTable(g, topo, 512 * 1024);
  StepPool pool;
  int skipped = 0;
  for (CollKind kind : {CollKind::AllReduce, CollKind::AllGather, CollKind::Broadcast}) {
    const auto& perBucket = t.choices[static_cast<size_t>(kind)];
    ASSERT_EQ(perBucket.size(), static_cast<size_t>(PlanTable::kBuckets));
    for (const PlanChoice& c : perBucket) EXPECT_FALSE(c.algorithm.empty()) << collKindName(kind);
    for (int b = 1; b < PlanTable::kBuckets - 1; b += 2) {
      const PlanChoice& c = perBucket[static_cast<size_t>(b)];
      const PlanChoice& above = perBucket[static_cast<size_t>(b + 1)];
      const PlanChoice& below = perBucket[static_cast<size_t>(b - 1)];
      if (c.candidates.rfind("not priced", 0) != 0) {
        // Priced: where its neighbours differ, or the default changes there.
        const PlanChoice priced = planner.priceBucket(kind, b, g, topo, 512 * 1024, pool);
        EXPECT_EQ(c.algorithm, priced.algorithm) << collKindName(kind) << " bucket " << b;
        EXPECT_DOUBLE_EQ(c.estimatedUs, priced.estimatedUs) << collKindName(kind) << " bucket " << b;
        continue;
      }
      ++skipped;
      EXPECT_EQ(c.algorithm, above.algorithm);
      EXPECT_EQ(c.algorithm, below.algorithm);
      EXPECT_GE(c.estimatedUs, std::min(above.estimatedUs, below.estimatedUs));
      EXPECT_LE(c.estimatedUs, std::max(above.estimatedUs, below.estimatedUs));
      const PlanChoice priced = planner.priceBucket(kind, b, g, topo, 512 * 1024, pool);
      EXPECT_EQ(c.algorithm, priced.algorithm) << collKindName(kind) << " bucket " << b << ": " << priced.candidates;
    }
  }
  EXPECT_GT(skipped, 10);
  // At most 32 ranks every bucket is priced.
  const PlanTable small = planner.buildTable(hosts(32, 8), deriveTopology(hosts(32, 8)), 512 * 1024);
  for (const auto& perBucket : small.choices) {
    for (const PlanChoice& c : perBucket) EXPECT_EQ(c.candidates.rfind("not priced", 0), std::string::npos);
  }
}

// Rank 0 prices a table for up to 32 ranks, and up to 64 across hosts.
TEST(PlanTable, WhichCommunicatorsArePriced) {
  const auto peers = [](int n, int perHost) {
    std::vector<PeerInfo> p(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) p[static_cast<size_t>(r)].hostId = "h" + std::to_string(r / perHost);
    return p;
  };
  EXPECT_FALSE(planWorthPricing(peers(1, 1)));
  EXPECT_TRUE(planWorthPricing(peers(32, 32)));
  EXPECT_FALSE(planWorthPricing(peers(33, 33)));
  EXPECT_TRUE(planWorthPricing(peers(33, 32)));
  EXPECT_TRUE(planWorthPricing(peers(64, 8)));
  EXPECT_FALSE(planWorthPricing(peers(64, 64)));
  EXPECT_FALSE(planWorthPricing(peers(65, 8)));
}

// hclPlanInfo_t::groups has 256 bytes: 64 ranks in two levels need runs.
TEST(TopologyText, WritesRunsWhereTheListDoesNotFitAndReadsBothBack) {
  Topology small;
  small.levels = {{0, 0, 1, 1}, {0, 0, 0, 0}};
  EXPECT_EQ(topologyText(small, 256), "0 0 1 1; 0 0 0 0");
  EXPECT_EQ(parseTopologyText("0 0 1 1; 0 0 0 0", 4).levels, small.levels);

  Topology hostsOfEight;
  hostsOfEight.levels.resize(2);
  for (int r = 0; r < 64; ++r) {
    hostsOfEight.levels[0].push_back(r / 8);
    hostsOfEight.levels[1].push_back(r / 32);
  }
  const std::string runs = topologyText(hostsOfEight, 256);
  EXPECT_EQ(runs, "0*8 1*8 2*8 3*8 4*8 5*8 6*8 7*8; 0*32 1*32");
  EXPECT_EQ(parseTopologyText(runs, 64).levels, hostsOfEight.levels);

  // No runs to shorten: nothing rather than a cut list.
  Topology alternating;
  alternating.levels.assign(2, {});
  for (int r = 0; r < 64; ++r) {
    alternating.levels[0].push_back(r % 32);
    alternating.levels[1].push_back(r % 2);
  }
  EXPECT_EQ(topologyText(alternating, 256), "");
  EXPECT_EQ(parseTopologyText(topologyText(alternating, 4096), 64).levels, alternating.levels);

  // Levels that do not give each rank one group are dropped.
  EXPECT_TRUE(parseTopologyText("0*3 1", 5).levels.empty());
  EXPECT_EQ(parseTopologyText("0*3 1", 4).levels, (std::vector<std::vector<int>>{{0, 0, 0, 1}}));
  EXPECT_TRUE(parseTopologyText("0*x 1*2", 3).levels.empty());
  EXPECT_TRUE(parseTopologyText("0*0 1*4", 4).levels.empty());
  EXPECT_EQ(parseTopologyText("0*2 1; 0 0 0 1 1", 3).levels, (std::vector<std::vector<int>>{{0, 0, 1}}));
}

TEST(PlanTable, WireRoundTrip) {
  LinkGraph g = uniform(4, {10, 100});
  Topology topo;
  topo.levels = {{0, 0, 1, 1}};
  const PlanTable t = Planner().buildTable(g, topo, 512 * 1024);
  const auto bytes = t.serialize();
  PlanTable u;
  ASSERT_TRUE(PlanTable::deserialize(bytes.data(), bytes.size(), u));
  EXPECT_EQ(u.topology.levels, topo.levels);
  ASSERT_EQ(u.choices.size(), t.choices.size());
  const PlanChoice* a = t.find(CollKind::AllGather, 1 << 20);
  const PlanChoice* b = u.find(CollKind::AllGather, 1 << 20);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->algorithm, b->algorithm);
  EXPECT_DOUBLE_EQ(a->estimatedUs, b->estimatedUs);
  EXPECT_EQ(a->candidates, b->candidates);
  EXPECT_EQ(a->withoutPeerAccess, b->withoutPeerAccess);
  EXPECT_FALSE(PlanTable::deserialize(bytes.data(), bytes.size() - 3, u));
}

TEST(PlanTable, DescriptionNamesEveryCollectiveAndTheGroups) {
  Topology topo;
  topo.levels = {{0, 0, 1, 1}};
  const std::string text = describePlanTable(Planner().buildTable(uniform(4, {10, 100}), topo, 512 * 1024));
  for (const char* coll : {"allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall"})
    EXPECT_NE(text.find(coll), std::string::npos) << coll << " missing from:\n" << text;
  EXPECT_NE(text.find("level 0 groups: 0 0 1 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace hcl
