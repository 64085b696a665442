// The per-shape choice between staging through shared scratch and going
// straight between buffers (core/staging_choice.h), fed with call times.
#include "core/staging_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <vector>

namespace {

using hcl::StagingChoice;

const StagingChoice::Shape kShape{1, 1u << 20, 1u << 20};

// Runs `calls` calls, each taking the time `cost` gives for the way
// proposed; returns the ways, true for staged, and counts in `turns` the
// calls after which the lead changed.
std::vector<bool> runCalls(StagingChoice& choice, int calls, const std::function<int64_t(bool staged)>& cost,
                           int* turns = nullptr) {
  std::vector<bool> ways;
  for (int i = 0; i < calls; ++i) {
    const bool staged = choice.propose(kShape);
    const bool turned = choice.record(kShape, staged, cost(staged));
    if (turns) *turns += turned ? 1 : 0;
    ways.push_back(staged);
  }
  return ways;
}

size_t countDirect(const std::vector<bool>& ways, size_t from, size_t to) {
  size_t n = 0;
  for (size_t i = from; i < to && i < ways.size(); ++i) n += ways[i] ? 0 : 1;
  return n;
}

TEST(StagingChoice, ForcedModesAlwaysProposeTheSame) {
  StagingChoice always(StagingChoice::Mode::Always), never(StagingChoice::Mode::Never);
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(always.propose(kShape));
    EXPECT_FALSE(never.propose(kShape));
    always.record(kShape, true, 1'000'000);
    never.record(kShape, false, 1'000'000);
  }
}

// Staging is what the planner chose: it leads until the other way has been
// measured faster, and the other way is tried less and less often.
TEST(StagingChoice, FasterStagingKeepsTheLeadWithFewerTries) {
  StagingChoice choice;
  const auto ways = runCalls(choice, 2000, [](bool staged) { return staged ? 100 : 300; });
  for (size_t i = 0; i < StagingChoice::kFirstTry - 1; ++i) EXPECT_TRUE(ways[i]) << i;
  // A try is kTryCalls calls in a row.
  static_assert(StagingChoice::kTryCalls == 2);
  EXPECT_FALSE(ways[StagingChoice::kFirstTry - 1]);
  EXPECT_FALSE(ways[StagingChoice::kFirstTry]);
  EXPECT_TRUE(ways[StagingChoice::kFirstTry + 1]);
  // Then tries further and further apart, up to every kMaxInterval calls.
  EXPECT_LE(countDirect(ways, 0, 2000), 13u * StagingChoice::kTryCalls);
  EXPECT_LE(countDirect(ways, StagingChoice::kFirstTry + 1, 20), size_t{StagingChoice::kTryCalls});
  EXPECT_EQ(countDirect(ways, 1000, 1000 + StagingChoice::kMaxInterval), size_t{StagingChoice::kTryCalls});
}

// When staging slows (the host moved the ranks' CPUs apart), the choice
// turns within a few calls, and turns back soon after staging is fast again.
TEST(StagingChoice, FollowsAChangeEitherWay) {
  StagingChoice choice;
  bool slowStaging = false;
  const auto cost = [&](bool staged) -> int64_t { return staged ? (slowStaging ? 1000 : 100) : 200; };
  int turns = 0;
  runCalls(choice, 600, cost, &turns);
  EXPECT_EQ(turns, 0);
  EXPECT_TRUE(choice.leadsWithStaging(kShape));
  slowStaging = true;
  const auto slow = runCalls(choice, 600, cost, &turns);
  EXPECT_EQ(turns, 1);
  EXPECT_FALSE(choice.leadsWithStaging(kShape));
  EXPECT_EQ(choice.estimateNanos(kShape, false), 200);
  // Two to turn it, then six tries of two calls.
  EXPECT_LE(600 - countDirect(slow, 0, 600), 2u + 6 * StagingChoice::kTryCalls)
      << "staged calls while staging was slow";
  // Two slow calls turn it; from there only the tries stage.
  EXPECT_GE(countDirect(slow, 2, 20), 16u);
  slowStaging = false;
  const auto fast = runCalls(choice, 600, cost, &turns);
  EXPECT_EQ(turns, 2);
  EXPECT_TRUE(choice.leadsWithStaging(kShape));
  EXPECT_EQ(choice.estimateNanos(kShape, true), 100);
  // The next try of staging comes within kMaxInterval calls; two fast ones
  // turn the choice.
  EXPECT_LE(countDirect(fast, 0, 600), size_t{StagingChoice::kMaxInterval} + 2 * StagingChoice::kFirstInterval);
  EXPECT_EQ(countDirect(fast, 400, 600), size_t{StagingChoice::kTryCalls});
}

// One slow call (a page fault, a preempted rank) does not turn the choice.
TEST(StagingChoice, OneSlowCallDoesNotTurnIt) {
  StagingChoice choice;
  int call = 0;
  const auto ways = runCalls(choice, 200, [&](bool staged) -> int64_t {
    ++call;
    if (staged) return call == 100 ? 100'000 : 100;
    return 300;
  });
  EXPECT_TRUE(ways[100]);
  EXPECT_TRUE(ways[101]);
  EXPECT_TRUE(ways[102]);
}

// The first call of each way faults its memory in: not a sample.
TEST(StagingChoice, TheFirstCallOfEachWayIsNotASample) {
  StagingChoice choice;
  bool stagedCold = true, directCold = true;
  const auto ways = runCalls(choice, 60, [&](bool staged) -> int64_t {
    bool& cold = staged ? stagedCold : directCold;
    // Staging's first call also creates and maps the windows.
    const int64_t t = cold ? (staged ? 10'000'000 : 1000) : (staged ? 100 : 300);
    cold = false;
    return t;
  });
  // Staging keeps the lead: direct calls are tries only.
  EXPECT_LE(countDirect(ways, 0, 60), 4u * StagingChoice::kTryCalls);
  size_t run = 0, longest = 0;
  for (bool staged : ways) {
    run = staged ? 0 : run + 1;
    longest = std::max(longest, run);
  }
  EXPECT_EQ(longest, size_t{StagingChoice::kTryCalls});
}

// A call that goes the other way than the one before finds the caches
// holding what that one touched, which the way that runs call after call
// never pays: it is no sample, and the try's later call decides. Direct is
// faster here, but slower whenever it follows a staged call.
TEST(StagingChoice, ACallThatTurnsTheWayIsNotASample) {
  StagingChoice choice;
  bool last = true;
  const auto ways = runCalls(choice, 100, [&](bool staged) -> int64_t {
    const int64_t t = (staged ? 100 : 80) + (staged != last ? 1000 : 0);
    last = staged;
    return t;
  });
  EXPECT_FALSE(choice.leadsWithStaging(kShape));
  EXPECT_EQ(choice.estimateNanos(kShape, false), 80);
  EXPECT_GE(countDirect(ways, 50, 100), 45u);
}

// Staging keeps the lead until it takes kStagingMargin times as long as
// going straight: a try of it finds its regions colder than calls in a row.
TEST(StagingChoice, StagingLeadsWithinTheMargin) {
  StagingChoice within, beyond;
  runCalls(within, 100, [](bool staged) { return staged ? 110 : 100; });
  EXPECT_TRUE(within.leadsWithStaging(kShape));
  runCalls(beyond, 100, [](bool staged) { return staged ? 130 : 100; });
  EXPECT_FALSE(beyond.leadsWithStaging(kShape));
}

// A call that is no sample still counts as the way that ran last.
TEST(StagingChoice, ACallAfterASkippedOneOfTheOtherWayIsNotASample) {
  StagingChoice choice;
  for (int i = 0; i < 2; ++i) choice.record(kShape, false, 100);  // direct measured: 100
  for (int i = 0; i < 2; ++i) choice.record(kShape, true, 50);    // staging warm and measured: 50
  EXPECT_TRUE(choice.leadsWithStaging(kShape));
  choice.skip(kShape, false);
  // Slow because the skipped call went straight: not a sample.
  EXPECT_FALSE(choice.record(kShape, true, 10'000));
  EXPECT_EQ(choice.estimateNanos(kShape, true), 50);
  // The next one in a row is.
  choice.record(kShape, true, 10'000);
  EXPECT_EQ(choice.estimateNanos(kShape, true), 10'000);
}

// What makes staging slow holds for every size: a shape not measured yet
// starts with the way the last measured shape led with.
TEST(StagingChoice, ANewShapeStartsWithTheLastLead) {
  StagingChoice choice;
  runCalls(choice, 50, [](bool staged) { return staged ? 1000 : 100; });
  const StagingChoice::Shape fresh{1, 8u << 20, 8u << 20};
  EXPECT_FALSE(choice.propose(fresh));
  choice.record(fresh, false, 100);
  EXPECT_FALSE(choice.propose(fresh));
}

// Once a shape has measured both ways, a new one keeps the inherited lead
// for kFirstInterval calls before its first try: in a sweep, the largest
// sizes run a few calls each, and a try at the third would be a large part
// of them. Before any shape has measured both, the first try comes at the
// third call.
TEST(StagingChoice, ANewShapeTriesLaterOnceSomeShapeMeasuredBothWays) {
  StagingChoice choice;
  const StagingChoice::Shape first{1, 4u << 20, 4u << 20}, second{1, 8u << 20, 8u << 20};
  std::vector<bool> ways;
  for (int i = 0; i < 8; ++i) {
    const bool staged = choice.propose(first);
    choice.record(first, staged, staged ? 100 : 300);
    ways.push_back(staged);
  }
  EXPECT_FALSE(ways[StagingChoice::kFirstTry - 1]) << "no early try before both ways were measured";
  EXPECT_GT(choice.estimateNanos(first, false), 0);
  ways.clear();
  for (uint32_t i = 0; i < StagingChoice::kFirstInterval + 1; ++i) {
    const bool staged = choice.propose(second);
    choice.record(second, staged, staged ? 100 : 300);
    ways.push_back(staged);
  }
  EXPECT_EQ(countDirect(ways, 0, StagingChoice::kFirstInterval - 1), 0u);
  EXPECT_FALSE(ways[StagingChoice::kFirstInterval - 1]) << "the first try of the new shape";
}

TEST(StagingChoice, ShapesAreMeasuredApart) {
  StagingChoice choice;
  const StagingChoice::Shape other{1, 4096, 4096};
  for (int i = 0; i < 50; ++i) {
    const bool a = choice.propose(kShape);
    choice.record(kShape, a, a ? 1000 : 100);  // staging slower here
    const bool b = choice.propose(other);
    choice.record(other, b, b ? 100 : 1000);  // and faster here
  }
  int stagedA = 0, stagedB = 0;
  for (int i = 0; i < 5; ++i) {
    stagedA += choice.propose(kShape) ? 1 : 0;
    stagedB += choice.propose(other) ? 1 : 0;
  }
  EXPECT_LE(stagedA, 1);
  EXPECT_GE(stagedB, 4);
}

}  // namespace
