// Every algorithm for many rank counts, run on the in-memory simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>

#include "collectives/plan/plan.h"
#include "schedule_simulator.h"

namespace {

using hcl::CollArgs;
using hcl::CollKind;

struct Case {
  int nranks;
  size_t count;
  size_t chunkBytes;
};

class Algorithms : public ::testing::TestWithParam<Case> {};

std::vector<int64_t> iota(size_t n, int64_t start) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

CollArgs args(CollKind kind, int rank, const Case& c, int root = 0) {
  CollArgs a;
  a.kind = kind;
  a.rank = rank;
  a.nranks = c.nranks;
  a.count = c.count;
  a.type = hclInt64;
  a.root = root;
  a.chunkBytes = c.chunkBytes;
  return a;
}

// A float collective of `bytes` bytes per rank's count on `nranks` ranks.
CollArgs floatArgs(CollKind kind, int nranks, size_t bytes, size_t chunkBytes = 512 * 1024) {
  CollArgs a;
  a.kind = kind;
  a.nranks = nranks;
  a.type = hclFloat32;
  a.count = bytes / sizeof(float);
  a.chunkBytes = chunkBytes;
  return a;
}

hcl::ReduceSpec sumSpec(int n) {
  hcl::ReduceSpec s;
  s.type = hclInt64;
  s.kind = hcl::ReduceKind::Sum;
  s.nranks = n;
  return s;
}

TEST_P(Algorithms, AllReduceReduceScatterReduce) {
  const Case c = GetParam();
  const size_t n = static_cast<size_t>(c.nranks);
  // The default choice, ring forced for small messages too, and the direct
  // algorithms on a communicator whose links reach peers' memory.
  for (const char* spec : {"", "allreduce:ring", "direct"})
  for (CollKind kind : {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::Reduce}) {
    hcl::Planner planner(spec);
    planner.setPeerAccess(std::string(spec) == "direct");
    const size_t inCount = kind == CollKind::ReduceScatter ? c.count * n : c.count;
    const int root = static_cast<int>(c.count % n);
    std::vector<std::vector<int64_t>> in(n), out(n, std::vector<int64_t>(c.count, -1));
    std::vector<hcltest::SimRank> ranks(n);
    for (size_t r = 0; r < n; ++r) {
      in[r] = iota(inCount, static_cast<int64_t>(r) * 1000);
      ranks[r] = {planner.plan(args(kind, static_cast<int>(r), c, root)), in[r].data(), out[r].data(), sumSpec(c.nranks)};
    }
    if (std::string(spec) == "direct") {
      ASSERT_EQ(ranks[0].schedule.algorithm, "direct") << hcl::collKindName(kind);
    }
    ASSERT_EQ(hcltest::simulate(ranks), "") << hcl::collKindName(kind) << " " << spec;
    for (size_t r = 0; r < n; ++r) {
      if (kind == CollKind::Reduce && static_cast<int>(r) != root) continue;
      for (size_t i = 0; i < c.count; ++i) {
        const size_t gi = kind == CollKind::ReduceScatter ? r * c.count + i : i;
        int64_t want = 0;
        for (size_t p = 0; p < n; ++p) want += static_cast<int64_t>(p) * 1000 + static_cast<int64_t>(gi);
        ASSERT_EQ(out[r][i], want) << hcl::collKindName(kind) << " " << spec << " rank " << r << " element " << i;
      }
    }
  }
}

TEST_P(Algorithms, DataMovement) {
  const Case c = GetParam();
  const size_t n = static_cast<size_t>(c.nranks);
  const int root = static_cast<int>((c.count + 1) % n);
  for (const char* spec : {"", "direct"})
  for (CollKind kind : {CollKind::AllGather, CollKind::Broadcast, CollKind::AlltoAll, CollKind::Gather, CollKind::Scatter}) {
    hcl::Planner planner(spec);
    planner.setPeerAccess(std::string(spec) == "direct");
    const bool sendsN = kind == CollKind::AlltoAll || kind == CollKind::Scatter;
    const bool recvsN = kind == CollKind::AllGather || kind == CollKind::AlltoAll || kind == CollKind::Gather;
    std::vector<std::vector<int64_t>> in(n), out(n);
    std::vector<hcltest::SimRank> ranks(n);
    for (size_t r = 0; r < n; ++r) {
      in[r] = iota(sendsN ? c.count * n : c.count, static_cast<int64_t>(r) * 100000);
      out[r].assign(recvsN ? c.count * n : c.count, -1);
      ranks[r] = {planner.plan(args(kind, static_cast<int>(r), c, root)), in[r].data(), out[r].data(), sumSpec(c.nranks)};
    }
    if (std::string(spec) == "direct" && kind != CollKind::Gather && kind != CollKind::Scatter) {
      ASSERT_EQ(ranks[0].schedule.algorithm, "direct") << hcl::collKindName(kind);
    }
    ASSERT_EQ(hcltest::simulate(ranks), "") << hcl::collKindName(kind) << " " << spec;
    for (size_t r = 0; r < n; ++r) {
      for (size_t i = 0; i < out[r].size(); ++i) {
        int64_t want = -1;
        const size_t block = i / std::max<size_t>(1, c.count), off = i % std::max<size_t>(1, c.count);
        switch (kind) {
          case CollKind::AllGather: want = static_cast<int64_t>(block) * 100000 + static_cast<int64_t>(off); break;
          case CollKind::Broadcast: want = static_cast<int64_t>(root) * 100000 + static_cast<int64_t>(i); break;
          case CollKind::AlltoAll: want = static_cast<int64_t>(block) * 100000 + static_cast<int64_t>(r * c.count + off); break;
          case CollKind::Gather:
            if (static_cast<int>(r) != root) continue;
            want = static_cast<int64_t>(block) * 100000 + static_cast<int64_t>(off);
            break;
          case CollKind::Scatter: want = static_cast<int64_t>(root) * 100000 + static_cast<int64_t>(r * c.count + i); break;
          default: break;
        }
        ASSERT_EQ(out[r][i], want) << hcl::collKindName(kind) << " " << spec << " rank " << r << " element " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RankCounts, Algorithms,
                         ::testing::Values(Case{1, 5, 4096}, Case{2, 0, 4096}, Case{2, 1, 4096}, Case{3, 7, 16},
                                           Case{5, 1000, 64}, Case{8, 333, 128}, Case{9, 10, 8}, Case{16, 257, 4096},
                                           Case{7, 100003, 1 << 16}, Case{33, 3, 8}),
                         [](const auto& info) {
                           return std::to_string(info.param.nranks) + "ranks_" + std::to_string(info.param.count) +
                                  "count_" + std::to_string(info.param.chunkBytes) + "slice";
                         });

TEST(Planner, OverrideGrammar) {
  EXPECT_STREQ(hcl::Planner("").algorithmFor(CollKind::AllReduce), "ring");
  EXPECT_STREQ(hcl::Planner("").algorithmFor(CollKind::AllReduce, 8), "flat");
  EXPECT_STREQ(hcl::Planner("").algorithmFor(CollKind::AllReduce, 8, 9), "rd");  // flat is for at most 8 ranks
  EXPECT_STREQ(hcl::Planner("").algorithmFor(CollKind::AllReduce, 4096), "rd");
  EXPECT_STREQ(hcl::Planner("ring").algorithmFor(CollKind::AllReduce, 8), "ring");
  EXPECT_STREQ(hcl::Planner("allreduce:rd").algorithmFor(CollKind::AllReduce, 8), "rd");
  EXPECT_STREQ(hcl::Planner("allreduce:rd").algorithmFor(CollKind::AllReduce, 1 << 20), "ring");
  EXPECT_STREQ(hcl::Planner("ring").algorithmFor(CollKind::AllReduce), "ring");
  EXPECT_STREQ(hcl::Planner("allreduce:ring;broadcast:ring").algorithmFor(CollKind::Broadcast), "ring");
  EXPECT_STREQ(hcl::Planner("^ring").algorithmFor(CollKind::AllReduce), "tree");
  EXPECT_STREQ(hcl::Planner("^ring").algorithmFor(CollKind::AllReduce, 8), "flat");
  EXPECT_STREQ(hcl::Planner("^ring,flat").algorithmFor(CollKind::AllReduce, 8), "rd");
  // Excluding every unlimited algorithm brings the default back (with a warning).
  EXPECT_STREQ(hcl::Planner("^ring,tree,rhd,hier").algorithmFor(CollKind::AllReduce), "ring");
  EXPECT_STREQ(hcl::Planner("tree").algorithmFor(CollKind::AlltoAll), "pairwise");
  // NCCL's grammar: a generic list, and a per-collective clause that wins for its collective.
  const hcl::Planner mixed("ring,tree;allreduce:hier");
  EXPECT_STREQ(mixed.algorithmFor(CollKind::AllReduce, 8), "hier");
  EXPECT_STREQ(mixed.algorithmFor(CollKind::Broadcast, 8), "ring");
  EXPECT_STREQ(hcl::Planner("^ring;allgather:rhd").algorithmFor(CollKind::AllGather), "rhd");
}

// Recursive doubling pairs places in the pairing order: with ranks 0 and 3
// on one CPU and 1 and 2 on the other (order 0,1,3,2), rank 0 meets rank 1
// first and rank 3 last, and every order still gives every rank the sum.
TEST(RecursiveDoubling, PairsPlacesInThePairingOrder) {
  const auto peersOf = [](const hcl::Schedule& s) {
    std::vector<int> peers;
    for (const hcl::Step& st : s.steps) {
      if (st.kind == hcl::Step::Kind::Send) peers.push_back(st.peer);
    }
    return peers;
  };
  struct Case2 {
    std::vector<int> order, rank0Peers;
  };
  const Case2 cases[] = {{{0, 1, 3, 2}, {1, 3}},
                         {{0, 2, 1, 3}, {2, 1}},
                         {{3, 0, 2, 1, 7, 5, 4, 6}, {2, 3, 4}},
                         {{2, 0, 5, 1, 4, 3}, {5, 1}}};
  for (const auto& [order, rank0Peers] : cases) {
    hcl::Planner planner("allreduce:rd");
    planner.setPairingOrder(order);
    const int n = static_cast<int>(order.size());
    const Case c{n, 5, 512 * 1024};
    std::vector<std::vector<int64_t>> in(order.size()), out(order.size(), std::vector<int64_t>(c.count, -1));
    std::vector<hcltest::SimRank> ranks(order.size());
    for (int r = 0; r < n; ++r) {
      const size_t ur = static_cast<size_t>(r);
      in[ur] = iota(c.count, r * 1000);
      ranks[ur] = {planner.plan(args(CollKind::AllReduce, r, c)), in[ur].data(), out[ur].data(), sumSpec(n)};
      ASSERT_EQ(ranks[ur].schedule.algorithm, "rd");
    }
    EXPECT_EQ(peersOf(ranks[0].schedule), rank0Peers) << "order of " << n;
    ASSERT_EQ(hcltest::simulate(ranks), "") << "order of " << n;
    for (size_t r = 0; r < order.size(); ++r) {
      for (size_t i = 0; i < c.count; ++i) {
        int64_t want = 0;
        for (int q = 0; q < n; ++q) want += q * 1000 + static_cast<int64_t>(i);
        ASSERT_EQ(out[r][i], want) << "order of " << n << ", rank " << r << ", element " << i;
      }
    }
  }
  // Anything but a permutation is not applied either.
  for (const std::vector<int>& bad : {std::vector<int>{0, 1, 1, 2}, std::vector<int>{0, 1, 2, 4},
                                      std::vector<int>{-1, 0, 1, 2}}) {
    hcl::Planner p("allreduce:rd");
    p.setPairingOrder(bad);
    EXPECT_EQ(peersOf(p.plan(args(CollKind::AllReduce, 0, Case{4, 5, 512 * 1024}))), (std::vector<int>{1, 2}));
  }
  // An order for another rank count is not applied.
  hcl::Planner planner("allreduce:rd");
  planner.setPairingOrder({0, 1, 3, 2});
  EXPECT_EQ(peersOf(planner.plan(args(CollKind::AllReduce, 0, Case{8, 5, 512 * 1024}))), (std::vector<int>{1, 2, 4}));
}

// Ranks that share CPUs take recursive doubling's rounds instead of the flat
// round, unless HCL_ALGO names flat.
TEST(Planner, FlatNeedsACpuPerRank) {
  hcl::Planner planner("");
  planner.setSharedCpus(true);
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 8, 4), "rd");
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 1024, 4), "rd");
  planner.setSharedCpus(false);
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 8, 4), "flat");
  hcl::Planner named("allreduce:flat");
  named.setSharedCpus(true);
  EXPECT_STREQ(named.algorithmFor(CollKind::AllReduce, 8, 4), "flat");
}

// Where ranks share CPUs each step waits for a peer that may not be running,
// so on a power-of-two count the ring's n-1 steps (and the hierarchical
// algorithms', which run the ring on one host) give way to recursive halving
// and doubling below 64 KiB blocks, unless HCL_ALGO names them.
TEST(Planner, RingNeedsLargerBlocksWhereCpusAreShared) {
  for (CollKind kind : {CollKind::AllGather, CollKind::ReduceScatter}) {
    const auto name = hcl::collKindName(kind);
    hcl::Planner planner("");
    EXPECT_STREQ(planner.algorithmFor(kind, 16 * 1024, 4), "ring") << name;
    planner.setSharedCpus(true);
    EXPECT_STREQ(planner.algorithmFor(kind, 16 * 1024, 4), "rhd") << name;
    EXPECT_STREQ(planner.algorithmFor(kind, 64 * 1024 - 4, 8), "rhd") << name;
    EXPECT_STREQ(planner.algorithmFor(kind, 64 * 1024, 4), "ring") << name;
    // Elsewhere rhd adds steps, and the ring stays the default.
    EXPECT_STREQ(planner.algorithmFor(kind, 16 * 1024, 3), "ring") << name;
    EXPECT_STREQ(planner.algorithmFor(kind, 16 * 1024, 6), "ring") << name;
    for (const char* algo : {"ring", "hier"}) {
      hcl::Planner named(std::string(name) + ":" + algo);
      named.setSharedCpus(true);
      EXPECT_STREQ(named.algorithmFor(kind, 16 * 1024, 4), algo) << name;
    }
    // Excluding rhd still leaves an algorithm for small blocks.
    hcl::Planner excluded(std::string(name) + ":^rhd");
    excluded.setSharedCpus(true);
    EXPECT_STREQ(excluded.algorithmFor(kind, 16 * 1024, 4), "rhd") << name;
    EXPECT_STREQ(excluded.algorithmFor(kind, 1 << 20, 4), "ring") << name;
  }
}

// Where ranks share CPUs, a direct broadcast or reduce, whose ranks wait on
// peers that may not be running, starts only where messages between them
// would take the single copy as well; a direct reduce-scatter later too.
TEST(Planner, DirectBroadcastAndReduceStartLaterWhereCpusAreShared) {
  hcl::Planner planner("");
  planner.setPeerAccess(true);
  EXPECT_STREQ(planner.algorithmFor(CollKind::Broadcast, 64 * 1024, 4), "direct");
  EXPECT_STREQ(planner.algorithmFor(CollKind::Reduce, 128 * 1024, 4), "direct");
  EXPECT_STREQ(planner.algorithmFor(CollKind::ReduceScatter, 16 * 1024, 4), "direct");
  planner.setSharedCpus(true);
  for (CollKind kind : {CollKind::Broadcast, CollKind::Reduce}) {
    EXPECT_STRNE(planner.algorithmFor(kind, 256 * 1024 - 4, 4), "direct") << hcl::collKindName(kind);
    EXPECT_STREQ(planner.algorithmFor(kind, 256 * 1024, 4), "direct") << hcl::collKindName(kind);
  }
  // The reduce-scatter, whose messages go only log2(n) steps there, at 32 KiB.
  EXPECT_STREQ(planner.algorithmFor(CollKind::ReduceScatter, 32 * 1024 - 4, 4), "rhd");
  EXPECT_STREQ(planner.algorithmFor(CollKind::ReduceScatter, 32 * 1024, 4), "direct");
  // The all-gather's pull keeps its size off AMD.
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllGather, 8 * 1024, 4), "direct");
  hcl::Planner named("broadcast:direct");
  named.setPeerAccess(true);
  named.setSharedCpus(true);
  EXPECT_STREQ(named.algorithmFor(CollKind::Broadcast, 64 * 1024, 4), "direct");
}

// With peer access, the direct allreduce starts where each rank's shard
// holds 8 KiB, so later on more ranks; the direct reduce-scatter (whose
// size is already per rank) at 16 KiB.
TEST(Planner, DirectStartsWhereTheShardPays) {
  hcl::Planner planner("");
  planner.setPeerAccess(true);
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 16 * 1024, 2), "rd");
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 16 * 1024 + 4, 2), "direct");
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 16 * 1024 + 4, 4), "ring");
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 32 * 1024, 4), "direct");
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 64 * 1024 - 4, 8), "ring");
  EXPECT_STREQ(planner.algorithmFor(CollKind::AllReduce, 64 * 1024, 8), "direct");
  EXPECT_STREQ(planner.algorithmFor(CollKind::ReduceScatter, 16 * 1024 - 4, 2), "ring");
  EXPECT_STREQ(planner.algorithmFor(CollKind::ReduceScatter, 16 * 1024, 4), "direct");
  // Without peer access neither is a candidate.
  EXPECT_STREQ(hcl::Planner("").algorithmFor(CollKind::AllReduce, 1 << 20, 2), "ring");
}

// The direct algorithms reduce their shard in slices of at most 256 KiB
// (128 KiB where ranks share CPUs, 512 KiB on AMD EPYC), so each stays in
// cache; a smaller HCL_CHUNK_BYTES still makes them smaller.
TEST(DirectSchedules, ShardSlicesAreCacheSized) {
  hcl::Planner planner("allreduce:direct");
  planner.setPeerAccess(true);
  hcl::Planner shared("allreduce:direct");
  shared.setPeerAccess(true);
  shared.setSharedCpus(true);
  hcl::Planner amd("allreduce:direct");
  amd.setPeerAccess(true);
  amd.setCpuFamily(hcl::CpuFamily::Amd);
  const auto largestPeerReduce = [](const hcl::Planner& planner, size_t chunkBytes) {
    const hcl::Schedule s = planner.plan(floatArgs(CollKind::AllReduce, 2, size_t{16} << 20, chunkBytes));
    EXPECT_EQ(s.algorithm, "direct");
    size_t largest = 0;
    for (const hcl::Step& st : s.steps) {
      if (st.kind == hcl::Step::Kind::ReducePeer) largest = std::max(largest, st.count);
    }
    return largest;
  };
  EXPECT_EQ(largestPeerReduce(planner, 1024 * 1024), 256u * 1024 / sizeof(float));
  EXPECT_EQ(largestPeerReduce(planner, 64 * 1024), 64u * 1024 / sizeof(float));
  EXPECT_EQ(largestPeerReduce(shared, 1024 * 1024), 128u * 1024 / sizeof(float));
  EXPECT_EQ(largestPeerReduce(amd, 1024 * 1024), 512u * 1024 / sizeof(float));
  EXPECT_EQ(largestPeerReduce(amd, 64 * 1024), 64u * 1024 / sizeof(float));
}

// All-gather copies its own block past the cache only where the whole
// output (every rank's block) reaches 32 MiB.
TEST(DirectSchedules, OwnBlockStreamedForLargeOutputs) {
  hcl::Planner planner("allgather:direct");
  planner.setPeerAccess(true);
  const auto ownCopyStreams = [&](size_t outputBytes) {
    const hcl::Schedule s = planner.plan(floatArgs(CollKind::AllGather, 2, outputBytes / 2));
    EXPECT_EQ(s.algorithm, "direct");
    for (const hcl::Step& st : s.steps) {
      if (st.kind == hcl::Step::Kind::Copy) return st.streamDst;
    }
    ADD_FAILURE() << "no copy of the own block";
    return false;
  };
  EXPECT_FALSE(ownCopyStreams(size_t{16} << 20));
  EXPECT_TRUE(ownCopyStreams(size_t{32} << 20));
}

// The window all-gather and all-to-all store their staged outputs past the
// cache from 16 MiB of outputs on the host, the direct branch's own block
// as the direct all-gather does; and their windows rotate within 4 MiB.
TEST(WindowCopies, OutputsPastTheCacheOnlyWhereTheyLeaveIt) {
  hcl::Planner planner("allgather:window;alltoall:window");
  planner.setPeerAccess(true);
  for (CollKind kind : {CollKind::AllGather, CollKind::AlltoAll}) {
    const auto streamed = [&](size_t blockBytes, hcl::Only only) {
      const hcl::Schedule s = planner.plan(floatArgs(kind, 2, blockBytes));
      EXPECT_EQ(s.algorithm, "window");
      EXPECT_LE(s.scratchTurns * s.scratchBytes, std::max<size_t>(4u << 20, s.scratchBytes));
      int yes = 0, no = 0;
      for (const hcl::Step& st : s.steps) {
        const bool intoRecv = (st.kind == hcl::Step::Kind::Copy || st.kind == hcl::Step::Kind::ReadPeer) &&
                              st.dst.id == hcl::BufferId::Recv && st.only == only;
        // The direct branch's pulls go through the kernel, which streams nothing.
        if (intoRecv && !(only == hcl::Only::Direct && st.kind == hcl::Step::Kind::ReadPeer)) {
          ++(st.streamDst ? yes : no);
        }
      }
      EXPECT_TRUE(yes == 0 || no == 0) << hcl::collKindName(kind) << " " << blockBytes;
      return yes > 0;
    };
    const auto name = hcl::collKindName(kind);
    EXPECT_FALSE(streamed(size_t{2} << 20, hcl::Only::Staged)) << name;  // 8 MiB of outputs
    EXPECT_TRUE(streamed(size_t{4} << 20, hcl::Only::Staged)) << name;   // 16 MiB
    EXPECT_FALSE(streamed(size_t{8} << 20, hcl::Only::Direct)) << name;  // 32 MiB
    EXPECT_TRUE(streamed(size_t{16} << 20, hcl::Only::Direct)) << name;  // 64 MiB
  }
}

// Where ranks share CPUs (and so their caches), the regions that small
// windows of the all-gather and all-to-all take in turn stay within 2 MiB.
TEST(WindowCopies, SmallWindowsRotateWithinLessWhereRanksShareCpus) {
  for (CollKind kind : {CollKind::AllGather, CollKind::AlltoAll}) {
    const auto rotated = [&](bool sharedCpus) {
      hcl::Planner planner("allgather:window;alltoall:window");
      planner.setPeerAccess(true);
      planner.setSharedCpus(sharedCpus);
      // Windows of 512 KiB (all-gather) and 768 KiB (all-to-all, three readers).
      const size_t block = kind == CollKind::AllGather ? size_t{512} << 10 : size_t{256} << 10;
      const hcl::Schedule s = planner.plan(floatArgs(kind, 4, block));
      EXPECT_EQ(s.algorithm, "window");
      return s.scratchTurns * s.scratchBytes;
    };
    const auto name = hcl::collKindName(kind);
    const size_t own = rotated(false), shared = rotated(true);
    EXPECT_LE(own, size_t{4} << 20) << name;
    EXPECT_GT(own, size_t{2} << 20) << name;
    EXPECT_LE(shared, size_t{2} << 20) << name;
    EXPECT_GT(shared, size_t{1} << 20) << name;
  }
}

// The window all-reduce starts where all ranks' buffers together leave the
// cache: 32 MiB messages on 2 ranks, 16 MiB on 4 and more, never below that.
TEST(Planner, WindowThresholdScalesWithRanks) {
  hcl::Planner planner;
  planner.setPeerAccess(true);
  const auto choose = [&](size_t bytes, int nranks) {
    return planner.plan(floatArgs(CollKind::AllReduce, nranks, bytes)).algorithm;
  };
  EXPECT_EQ(choose(size_t{16} << 20, 2), "direct");
  EXPECT_EQ(choose(size_t{32} << 20, 2), "window");
  EXPECT_EQ(choose(size_t{8} << 20, 4), "direct");
  EXPECT_EQ(choose(size_t{16} << 20, 4), "window");
  EXPECT_EQ(choose(size_t{8} << 20, 16), "direct");
  EXPECT_EQ(choose(size_t{16} << 20, 16), "window");
}

// The direct reduce starts at 256 KiB on AMD EPYC (the ring is ahead
// below), at 128 KiB on other families, and at 256 KiB on either where
// ranks share CPUs.
TEST(Planner, DirectReduceThresholdFollowsTheCpuFamily) {
  using hcl::CpuFamily;
  const auto reduceWith = [](CpuFamily family, bool sharedCpus, size_t bytes, int nranks) {
    hcl::Planner planner;
    planner.setPeerAccess(true);
    planner.setCpuFamily(family);
    planner.setSharedCpus(sharedCpus);
    return std::string(planner.algorithmFor(CollKind::Reduce, bytes, nranks));
  };
  EXPECT_NE(reduceWith(CpuFamily::Amd, false, size_t{128} << 10, 2), "direct");
  EXPECT_EQ(reduceWith(CpuFamily::Amd, false, size_t{256} << 10, 2), "direct");
  EXPECT_EQ(reduceWith(CpuFamily::Other, false, size_t{128} << 10, 2), "direct");
  EXPECT_NE(reduceWith(CpuFamily::Other, false, size_t{64} << 10, 2), "direct");
  for (CpuFamily family : {CpuFamily::Other, CpuFamily::Amd}) {
    EXPECT_NE(reduceWith(family, true, size_t{128} << 10, 4), "direct");
    EXPECT_EQ(reduceWith(family, true, size_t{256} << 10, 4), "direct");
  }
}

// On AMD EPYC the window pays from 256 KiB where every rank has a CPU of
// its own, and from 32 KiB, after recursive doubling, where ranks share
// CPUs; other families keep the thresholds above.
TEST(Planner, WindowThresholdFollowsTheCpuFamily) {
  const auto plannerFor = [](hcl::CpuFamily family, bool sharedCpus) {
    hcl::Planner planner;
    planner.setPeerAccess(true);
    planner.setCpuFamily(family);
    planner.setSharedCpus(sharedCpus);
    return planner;
  };
  const auto choose = [&](hcl::CpuFamily family, bool sharedCpus, size_t bytes, int nranks) {
    return plannerFor(family, sharedCpus).plan(floatArgs(CollKind::AllReduce, nranks, bytes)).algorithm;
  };
  using hcl::CpuFamily;
  EXPECT_EQ(choose(CpuFamily::Amd, false, size_t{128} << 10, 2), "direct");
  EXPECT_EQ(choose(CpuFamily::Amd, false, size_t{256} << 10, 2), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, false, size_t{4} << 20, 2), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, true, size_t{16} << 10, 4), "rd");
  EXPECT_NE(choose(CpuFamily::Amd, true, (size_t{32} << 10) - 16, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, true, size_t{32} << 10, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, true, size_t{256} << 10, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, false, size_t{4} << 20, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, true, size_t{4} << 20, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Amd, true, size_t{256} << 20, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Other, false, size_t{1} << 20, 2), "direct");
  EXPECT_EQ(choose(CpuFamily::Other, true, size_t{16} << 20, 4), "window");
  EXPECT_EQ(choose(CpuFamily::Other, true, size_t{8} << 20, 4), "direct");

  // All-gather and all-to-all pull blocks from 8 KiB, on AMD from 16 KiB.
  for (CollKind kind : {CollKind::AllGather, CollKind::AlltoAll}) {
    for (CpuFamily family : {CpuFamily::Other, CpuFamily::Amd}) {
      const hcl::Planner planner = plannerFor(family, false);
      const std::string at8K = planner.algorithmFor(kind, 8 * 1024, 2);
      EXPECT_EQ(at8K == "direct", family == CpuFamily::Other) << hcl::collKindName(kind) << " " << at8K;
      EXPECT_STREQ(planner.algorithmFor(kind, 16 * 1024, 2), "direct") << hcl::collKindName(kind);
    }
  }
  // On AMD they stage through windows from 128 KiB blocks where every rank
  // has a CPU of its own; where ranks share CPUs, the all-gather from 32 KiB
  // blocks and the all-to-all from 64 KiB; not on other families.
  for (CollKind kind : {CollKind::AllGather, CollKind::AlltoAll}) {
    const size_t from = size_t{128} << 10;
    const size_t fromShared = kind == CollKind::AllGather ? size_t{32} << 10 : size_t{64} << 10;
    const auto name = hcl::collKindName(kind);
    EXPECT_STREQ(plannerFor(CpuFamily::Amd, false).algorithmFor(kind, from / 2, 2), "direct") << name;
    EXPECT_STREQ(plannerFor(CpuFamily::Amd, false).algorithmFor(kind, from, 2), "window") << name;
    EXPECT_STREQ(plannerFor(CpuFamily::Amd, false).algorithmFor(kind, size_t{64} << 20, 4), "window") << name;
    EXPECT_STRNE(plannerFor(CpuFamily::Amd, true).algorithmFor(kind, fromShared / 2, 4), "window") << name;
    EXPECT_STREQ(plannerFor(CpuFamily::Amd, true).algorithmFor(kind, fromShared, 4), "window") << name;
    EXPECT_STREQ(plannerFor(CpuFamily::Amd, true).algorithmFor(kind, size_t{4} << 20, 4), "window") << name;
    EXPECT_STREQ(plannerFor(CpuFamily::Other, false).algorithmFor(kind, size_t{64} << 20, 2), "direct") << name;
    EXPECT_STREQ(plannerFor(CpuFamily::Other, true).algorithmFor(kind, size_t{64} << 20, 4), "direct") << name;
  }
  // Below their windows, the all-to-all and all-gather of ranks that share
  // CPUs take messages on AMD, not the direct pull.
  EXPECT_STREQ(plannerFor(CpuFamily::Amd, true).algorithmFor(CollKind::AlltoAll, size_t{32} << 10, 4), "pairwise");
  EXPECT_STREQ(plannerFor(CpuFamily::Amd, false).algorithmFor(CollKind::AlltoAll, size_t{32} << 10, 2), "direct");
  EXPECT_STREQ(plannerFor(CpuFamily::Amd, true).algorithmFor(CollKind::AllGather, size_t{16} << 10, 4), "rhd");
  EXPECT_STREQ(plannerFor(CpuFamily::Amd, false).algorithmFor(CollKind::AllGather, size_t{16} << 10, 2), "direct");

  // Named in HCL_ALGO, the window runs at any size on any family.
  hcl::Planner named("allreduce:window");
  named.setPeerAccess(true);
  named.setCpuFamily(CpuFamily::Amd);
  named.setSharedCpus(true);
  EXPECT_EQ(named.plan(floatArgs(CollKind::AllReduce, 4, size_t{1} << 20)).algorithm, "window");
}

// The family is read off this machine's CPU.
TEST(Planner, HostCpuFamilyMatchesTheCpuVendor) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  if (!cpuinfo) GTEST_SKIP() << "no /proc/cpuinfo to compare with";
  std::string line;
  bool amd = false, found = false;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("vendor_id", 0) == 0) {
      found = true;
      amd = line.find("AuthenticAMD") != std::string::npos;
      break;
    }
  }
  if (!found) GTEST_SKIP() << "/proc/cpuinfo names no vendor_id (not x86)";
  EXPECT_EQ(hcl::hostCpuFamily(), amd ? hcl::CpuFamily::Amd : hcl::CpuFamily::Other);
  EXPECT_STREQ(hcl::toString(hcl::hostCpuFamily()), amd ? "amd" : "other");
}

}  // namespace

namespace {

// Each rank reads its peers' windows at offsets from its own count, which
// stay inside the windows whatever the peers' counts: ranks that disagree
// must fail at the start instead of finishing with wrong data.
TEST(WindowAllReduce, RanksThatDisagreeOnTheCountFail) {
  hcl::Planner planner("allreduce:window");
  planner.setPeerAccess(true);
  const size_t counts[] = {size_t{1} << 16, size_t{1} << 17};  // rank 1 asks for twice as much
  std::vector<std::vector<float>> in(2), out(2);
  std::vector<hcltest::SimRank> ranks(2);
  for (size_t r = 0; r < 2; ++r) {
    CollArgs a = floatArgs(CollKind::AllReduce, 2, counts[r] * sizeof(float), 64 * 1024);
    a.rank = static_cast<int>(r);
    in[r].assign(counts[r], 1.0f);
    out[r].assign(counts[r], 0.0f);
    ranks[r].schedule = planner.plan(a);
    ASSERT_EQ(ranks[r].schedule.algorithm, "window");
    ranks[r].send = in[r].data();
    ranks[r].recv = out[r].data();
    ranks[r].sendBytes = ranks[r].recvBytes = counts[r] * sizeof(float);
    ranks[r].spec.type = hclFloat32;
    ranks[r].spec.kind = hcl::ReduceKind::Sum;
    ranks[r].spec.nranks = 2;
  }
  // Not a deadlock later on: rank 0 would have finished its shorter call.
  const std::string error = hcltest::simulate(ranks);
  EXPECT_NE(error.find("sizes differ"), std::string::npos) << error;
}

// Where ranks share CPUs, 4 ranks' window all-reduce takes slices of
// about 307 KiB (3 MiB over ten regions) instead of the 512 KiB of
// HCL_CHUNK_BYTES; 2 ranks keep 512 KiB either way.
TEST(WindowAllReduce, SlicesShrinkWhereRanksShareCpus) {
  const auto windowBytes = [](int n, bool sharedCpus) {
    hcl::Planner planner("allreduce:window");
    planner.setPeerAccess(true);
    planner.setSharedCpus(sharedCpus);
    return planner.plan(floatArgs(CollKind::AllReduce, n, size_t{64} << 20)).scratchBytes;
  };
  EXPECT_EQ(windowBytes(2, false), windowBytes(2, true));
  EXPECT_EQ(windowBytes(2, true), 5 * (size_t{512} << 10));   // inputs 2, outputs 2, tmp
  EXPECT_EQ(windowBytes(4, false), 10 * (size_t{512} << 10));  // inputs 6, outputs 2, tmp, acc
  EXPECT_LE(windowBytes(4, true), size_t{3} << 20);
  EXPECT_GT(windowBytes(4, true), size_t{5} << 19);
}

// Peers map a rank's windows; they must fit in the scratch a communicator
// keeps between calls (16 MiB), whatever the rank count.
TEST(WindowAllReduce, WindowsStayWithinKeptScratch) {
  for (CollKind kind : {CollKind::AllReduce, CollKind::AllGather, CollKind::AlltoAll}) {
    // All-gather and all-to-all counts are per block.
    const size_t bytes = kind == CollKind::AllReduce ? size_t{1} << 30 : size_t{16} << 20;
    for (int n : {2, 4, 16, 64}) {
      for (bool sharedCpus : {false, true}) {
        for (hclDataType_t type : {hclFloat32, hclFloat64}) {
          hcl::Planner planner("allreduce:window;allgather:window;alltoall:window");
          planner.setPeerAccess(true);
          planner.setSharedCpus(sharedCpus);
          CollArgs a = floatArgs(kind, n, bytes, 4u << 20);
          a.type = type;
          a.count = bytes / hcl::dataTypeSize(type);
          a.rank = n - 1;
          const hcl::Schedule s = planner.plan(a);
          const std::string what = std::string(hcl::collKindName(kind)) + " " + std::to_string(n) + " ranks" +
                                   (sharedCpus ? ", shared CPUs, " : ", ") + std::to_string(hcl::dataTypeSize(type)) +
                                   "-byte elements";
          ASSERT_EQ(s.algorithm, "window") << what;
          EXPECT_GT(s.scratchBytes, 0u) << what;
          EXPECT_LE(s.scratchBytes, size_t{8} << 20) << what;
          // Where ranks share CPUs the all-reduce's window stays within
          // 3 MiB: more ranks, smaller slices.
          if (kind == CollKind::AllReduce && sharedCpus) {
            EXPECT_LE(s.scratchBytes, size_t{3} << 20) << what;
          }
          EXPECT_LE(s.scratchTurns * s.scratchBytes, std::max<size_t>(4u << 20, s.scratchBytes)) << what;
        }
      }
    }
  }
}

// Small windows rotate through scratch regions from call to call (peers no
// longer cache the lines a call stores into), within a bound; results that
// the next call still finds in cache are stored through it, larger ones past
// it.
TEST(WindowAllReduce, SmallWindowsRotateAndCachedResultsStayCached) {
  hcl::Planner planner("allreduce:window");
  planner.setPeerAccess(true);
  planner.setCpuFamily(hcl::CpuFamily::Amd);
  const auto intoRecvStreamed = [](const hcl::Schedule& s) {
    int streamed = 0, cached = 0;
    for (const hcl::Step& st : s.steps) {
      const bool intoRecv = (st.kind == hcl::Step::Kind::Copy || st.kind == hcl::Step::Kind::ReadPeer) &&
                            st.dst.id == hcl::BufferId::Recv && st.only == hcl::Only::Staged;
      if (intoRecv) ++(st.streamDst ? streamed : cached);
    }
    return std::pair{streamed, cached};
  };
  for (size_t bytes : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20}) {
    const hcl::Schedule s = planner.plan(floatArgs(CollKind::AllReduce, 2, bytes));
    ASSERT_EQ(s.algorithm, "window") << bytes;
    EXPECT_LE(s.scratchTurns * s.scratchBytes, std::max<size_t>(4u << 20, s.scratchBytes)) << bytes;
    const auto [streamed, cached] = intoRecvStreamed(s);
    EXPECT_EQ(streamed, 0) << bytes;
    EXPECT_GT(cached, 0) << bytes;
  }
  EXPECT_GT(planner.plan(floatArgs(CollKind::AllReduce, 2, size_t{256} << 10)).scratchTurns, 1u);
  const hcl::Schedule big = planner.plan(floatArgs(CollKind::AllReduce, 2, size_t{64} << 20));
  EXPECT_EQ(big.scratchTurns, 1u);
  const auto [streamed, cached] = intoRecvStreamed(big);
  EXPECT_GT(streamed, 0);
  EXPECT_EQ(cached, 0);
}

}  // namespace

namespace {

// A pre-multiplied sum scales each input by its own rank's scalar, which
// only that rank knows: no algorithm that reads peers' raw inputs.
TEST(Planner, RankDependentLoadAvoidsPeerAccess) {
  hcl::Planner planner;
  planner.setPeerAccess(true);
  for (CollKind kind : {CollKind::AllReduce, CollKind::ReduceScatter, CollKind::Reduce}) {
    for (size_t count : {size_t{1} << 16, size_t{1} << 24}) {
      CollArgs a = floatArgs(kind, 2, count * sizeof(float));
      const std::string plain = planner.plan(a).algorithm;
      EXPECT_TRUE(plain == "direct" || plain == "window") << hcl::collKindName(kind) << " " << count << ": " << plain;
      a.rankDependentLoad = true;
      a.loadIsIdentity = false;
      const std::string scaled = planner.plan(a).algorithm;
      EXPECT_NE(scaled, "direct") << hcl::collKindName(kind) << " " << count;
      EXPECT_NE(scaled, "window") << hcl::collKindName(kind) << " " << count;
    }
  }
}

}  // namespace
