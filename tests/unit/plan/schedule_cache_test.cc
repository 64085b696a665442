// The communicator's schedule cache: one plan per call shape, long programs
// not kept, and what the progress engine derives from a schedule.
#include <gtest/gtest.h>

#include <memory>

#include "core/schedule_cache.h"

namespace hcl {
namespace {

CollArgs allReduce(size_t count, int rank = 0, int nranks = 4) {
  CollArgs a;
  a.kind = CollKind::AllReduce;
  a.rank = rank;
  a.nranks = nranks;
  a.count = count;
  a.type = hclFloat32;
  return a;
}

TEST(ScheduleCache, SameShapeReusesThePlan) {
  Planner planner;
  ScheduleCache cache;
  auto first = cache.get(planner, allReduce(16));
  auto again = cache.get(planner, allReduce(16));
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(cache.size(), 1u);
}

TEST(ScheduleCache, EveryFieldOfTheShapeCounts) {
  Planner planner;
  ScheduleCache cache;
  const auto base = cache.get(planner, allReduce(16));
  CollArgs other = allReduce(17);
  EXPECT_NE(cache.get(planner, other).get(), base.get());
  other = allReduce(16);
  other.inPlace = true;
  EXPECT_NE(cache.get(planner, other).get(), base.get());
  other = allReduce(16);
  other.type = hclInt32;
  EXPECT_NE(cache.get(planner, other).get(), base.get());
  other = allReduce(16);
  other.kind = CollKind::Broadcast;
  other.root = 2;
  const auto bcast = cache.get(planner, other);
  other.root = 3;
  EXPECT_NE(cache.get(planner, other).get(), bcast.get());
  EXPECT_EQ(cache.get(planner, allReduce(16)).get(), base.get());
}

TEST(ScheduleCache, MatchesAFreshPlan) {
  Planner planner;
  ScheduleCache cache;
  for (size_t count : {size_t{1}, size_t{1000}, size_t{100000}}) {
    const CollArgs args = allReduce(count, 1, 3);
    const Schedule fresh = planner.plan(args);
    const auto cached = cache.get(planner, args);
    EXPECT_EQ(cached->schedule.algorithm, fresh.algorithm);
    EXPECT_EQ(cached->schedule.steps.size(), fresh.steps.size());
    EXPECT_EQ(cached->schedule.transfers, fresh.transfers);
    EXPECT_EQ(cached->schedule.scratchBytes, fresh.scratchBytes);
  }
}

TEST(ScheduleCache, LongProgramsAreNotKept) {
  Planner planner;
  ScheduleCache cache;
  CollArgs big = allReduce(size_t{1} << 22, 0, 3);
  big.chunkBytes = 4096;  // thousands of slices
  auto a = cache.get(planner, big);
  ASSERT_GT(a->schedule.steps.size(), 4096u);
  auto b = cache.get(planner, big);
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(cache.size(), 0u);
}

// A full cache starts afresh; a schedule a run still holds stays valid.
TEST(ScheduleCache, AFullCacheStartsAfreshWhileHeldSchedulesStayValid) {
  Planner planner;
  ScheduleCache cache;
  const CollArgs heldArgs = allReduce(3);
  const Schedule fresh = planner.plan(heldArgs);
  std::shared_ptr<const PreparedSchedule> held = cache.get(planner, heldArgs);
  const PreparedSchedule* cached = held.get();
  // New shapes until the cache starts afresh: its size drops.
  size_t count = 4, kept = cache.size();
  for (; count < 200000; ++count) {
    (void)cache.get(planner, allReduce(count));
    if (cache.size() < kept) break;
    kept = cache.size();
  }
  ASSERT_LT(count, 200000u) << "the cache never started afresh";
  EXPECT_GT(kept, 1u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(held.get(), cached);
  EXPECT_EQ(held->schedule.algorithm, fresh.algorithm);
  EXPECT_EQ(held->schedule.steps.size(), fresh.steps.size());
  // The held shape is planned again, not found.
  EXPECT_NE(cache.get(planner, heldArgs).get(), cached);
}

TEST(PrepareSchedule, DerivesPeersPerTransfer) {
  Schedule s;
  ScheduleBuilder b(s);
  const uint32_t r = b.recv(3, scratchAt(0), 8);
  const uint32_t t = b.send(1, sendAt(0), 8);
  b.send(3, sendAt(0), 8);
  b.wait(r);
  const auto p = prepareSchedule(std::move(s));
  ASSERT_EQ(p->transferPeer.size(), 3u);
  EXPECT_EQ(p->transferPeer[r], 3);
  EXPECT_EQ(p->transferPeer[t], 1);
  // In the order the prepared steps post to them: sends go first.
  EXPECT_EQ(p->peers, (std::vector<int>{1, 3}));
  EXPECT_FALSE(p->direct);
}

TEST(PrepareSchedule, PostsSendsFirstWithinEachRunOfPostsKeepingEachKindsOrder) {
  Schedule s;
  ScheduleBuilder b(s);
  const uint32_t r0 = b.recv(1, scratchAt(0), 8);
  const uint32_t r1 = b.recv(1, scratchAt(8), 8);
  const uint32_t s0 = b.send(1, sendAt(0), 8);
  const uint32_t s1 = b.send(2, sendAt(8), 8);
  b.wait(r0);
  const uint32_t r2 = b.recv(2, scratchAt(16), 8);
  const uint32_t s2 = b.send(2, sendAt(16), 8);
  b.waitAll({r1, r2, s0, s1, s2});
  const auto p = prepareSchedule(std::move(s));
  const std::vector<Step>& steps = p->schedule.steps;
  ASSERT_EQ(steps.size(), 12u);  // six posts and six waits
  std::vector<uint32_t> posted;
  for (const Step& st : steps) {
    if (st.kind == Step::Kind::Send || st.kind == Step::Kind::Recv) posted.push_back(st.transfer);
  }
  // The wait after the first four posts still separates them from the last two.
  EXPECT_EQ(posted, (std::vector<uint32_t>{s0, s1, r0, r1, s2, r2}));
  EXPECT_EQ(steps[4].kind, Step::Kind::Wait);
  EXPECT_EQ(steps[4].transfer, r0);
}

}  // namespace
}  // namespace hcl
