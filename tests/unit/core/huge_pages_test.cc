// HugePageAdvisor's counting, over a recorded stand-in for madvise: which
// regions a buffer covers, when each one's turn comes, how the wait between
// asks grows, and kept buffers. The real madvise is exercised by
// tests/integration/huge_pages_test.cc.
#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

namespace hcl {
namespace {

constexpr size_t kRegion = size_t{1} << 20;
constexpr uintptr_t kBase = uintptr_t{1} << 32;  // region-aligned; never dereferenced

const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

struct Recorder {
  std::vector<uintptr_t> regions;
  int answer = 0;
  HugePageAdvisor advisor(uint32_t after) {
    return HugePageAdvisor(after, kRegion, [this](void* region, size_t bytes) {
      EXPECT_EQ(bytes, kRegion);
      regions.push_back(reinterpret_cast<uintptr_t>(region));
      return answer;
    });
  }
  // Asks of `region` among the recorded ones.
  size_t asksOf(uintptr_t region) const { return static_cast<size_t>(std::count(regions.begin(), regions.end(), region)); }
};

TEST(HugePageAdvisor, AsksEveryRegionAtLeastHalfCoveredOnItsTurn) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(3);
  // Covers the first region but for 4 KiB, the second and third wholly, and
  // a quarter of the fourth.
  const void* p = at(kBase + 4096);
  const size_t bytes = 3 * kRegion + kRegion / 4 - 4096;
  advisor.noteUse(p, bytes);
  advisor.noteUse(p, bytes);
  EXPECT_TRUE(rec.regions.empty());
  advisor.noteUse(p, bytes);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase, kBase + kRegion, kBase + 2 * kRegion}));
  EXPECT_EQ(advisor.stats().collapsed, 3u);
}

TEST(HugePageAdvisor, ExactlyHalfCountsAtEitherEnd) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1);
  advisor.noteUse(at(kBase + kRegion / 2), kRegion);  // the second half of one, the first half of the next
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase, kBase + kRegion}));
}

TEST(HugePageAdvisor, ABufferUnderHalfOfEveryRegionItTouchesIsLeftAlone) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1);
  advisor.noteUse(at(kBase), kRegion / 2 - 1);
  advisor.noteUse(at(kBase + 100), 64);
  advisor.noteUse(nullptr, 0);
  // Half a region on each side of a boundary, less a byte.
  advisor.noteUse(at(kBase + kRegion / 2 + 1), kRegion - 2);
  EXPECT_TRUE(rec.regions.empty());
  advisor.noteUse(at(kBase), kRegion / 2);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase}));
}

TEST(HugePageAdvisor, TheWaitBetweenAsksDoublesUpToSixtyFourTurns) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(2);
  std::vector<int> askedAt;
  for (int use = 1; use <= 2 + 4 + 8 + 16 + 32 + 64 + 128 + 128 + 128; ++use) {
    const size_t before = rec.regions.size();
    advisor.noteUse(at(kBase), kRegion);
    if (rec.regions.size() != before) askedAt.push_back(use);
  }
  EXPECT_EQ(askedAt, (std::vector<int>{2, 6, 14, 30, 62, 126, 254, 382, 510}));
}

TEST(HugePageAdvisor, FailuresWaitLongerEachTimeAndASuccessIsRecorded) {
  Recorder rec;
  rec.answer = EINVAL;  // e.g. a region across a mapping's boundary
  HugePageAdvisor advisor = rec.advisor(2);
  for (int i = 0; i < 6; ++i) advisor.noteUse(at(kBase), kRegion);
  EXPECT_EQ(rec.regions.size(), 2u);  // at uses 2 and 6
  EXPECT_EQ(advisor.stats().failed, 2u);
  // The layout changed (the buffer was freed and the address reused).
  rec.answer = 0;
  for (int i = 0; i < 8; ++i) advisor.noteUse(at(kBase), kRegion);
  EXPECT_EQ(rec.regions.size(), 3u);
  EXPECT_EQ(advisor.stats().collapsed, 1u);
}

TEST(HugePageAdvisor, OverlappingSendAndReceiveCountOnce) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(2);
  // In place: the send block lies inside the receive buffer.
  advisor.noteUse(at(kBase + kRegion), kRegion, at(kBase), 4 * kRegion);
  EXPECT_TRUE(rec.regions.empty());
  advisor.noteUse(at(kBase + kRegion), kRegion, at(kBase), 4 * kRegion);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase, kBase + kRegion, kBase + 2 * kRegion, kBase + 3 * kRegion}));
  // Less than a region apart but sharing none: each counts its own, and the
  // region between them (a tenth inside either) is not asked.
  rec.regions.clear();
  const uintptr_t gap = kBase + 32 * kRegion;
  for (int i = 0; i < 2; ++i) {
    advisor.noteUse(at(gap + 2 * kRegion - kRegion / 20), kRegion + kRegion / 10, at(gap), kRegion + kRegion / 20);
  }
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{gap + 2 * kRegion, gap}));
  // Apart, each counts its own regions.
  rec.regions.clear();
  advisor.noteUse(at(kBase + 8 * kRegion), kRegion, at(kBase + 16 * kRegion), kRegion);
  advisor.noteUse(at(kBase + 8 * kRegion), kRegion, at(kBase + 16 * kRegion), kRegion);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase + 8 * kRegion, kBase + 16 * kRegion}));
}

TEST(HugePageAdvisor, ALargerCallOverAKeptBufferAsksItsNewRegionsAtOnce) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(2);
  // A sweep: two calls over the first two regions collapse them ...
  advisor.noteUse(at(kBase), 2 * kRegion);
  advisor.noteUse(at(kBase), 2 * kRegion);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase, kBase + kRegion}));
  // ... so the first larger call over the same start asks the rest.
  rec.regions.clear();
  advisor.noteUse(at(kBase), 4 * kRegion);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase + 2 * kRegion, kBase + 3 * kRegion}));
  // After that, each on its own turn only.
  rec.regions.clear();
  advisor.noteUse(at(kBase), 4 * kRegion);
  EXPECT_TRUE(rec.regions.empty());
}

TEST(HugePageAdvisor, ABufferSharingOnlyAnEndRegionIsNotKept) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(2);
  advisor.noteUse(at(kBase), kRegion);
  advisor.noteUse(at(kBase), kRegion);
  ASSERT_EQ(rec.regions, (std::vector<uintptr_t>{kBase}));
  rec.regions.clear();
  // Starts in the first quarter of the collapsed region: that region is at
  // its end, shared with whatever lies before it.
  advisor.noteUse(at(kBase + kRegion / 4), 2 * kRegion);
  EXPECT_TRUE(rec.regions.empty());
}

TEST(HugePageAdvisor, AFailedRegionIsNotAKeptBuffersReason) {
  Recorder rec;
  rec.answer = EAGAIN;
  HugePageAdvisor advisor = rec.advisor(2);
  advisor.noteUse(at(kBase), kRegion);
  advisor.noteUse(at(kBase), kRegion);
  ASSERT_EQ(rec.asksOf(kBase), 1u);
  advisor.noteUse(at(kBase), 2 * kRegion);  // the first region failed: not kept
  EXPECT_EQ(rec.asksOf(kBase + kRegion), 0u);
}

TEST(HugePageAdvisor, IgnoresRangesPastTheEndOfTheAddressSpace) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1);
  advisor.noteUse(at(UINTPTR_MAX - kRegion / 2), kRegion);
  advisor.noteUse(at(kBase), SIZE_MAX);
  EXPECT_TRUE(rec.regions.empty());
  EXPECT_EQ(advisor.trackedRegions(), 0u);
  // Up to the last byte: the top region, and nothing past it.
  const uintptr_t top = UINTPTR_MAX / kRegion * kRegion;
  advisor.noteUse(at(top - kRegion / 4), kRegion / 4 + kRegion - 1);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{top}));
  EXPECT_EQ(advisor.trackedRegions(), 1u);
}

TEST(HugePageAdvisor, OneCallAsksAtMostThirtyTwoRegionsNeverAskedOnesFirst) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1);
  std::vector<size_t> asks;
  for (int call = 0; call < 4; ++call) {
    const size_t before = rec.regions.size();
    advisor.noteUse(at(kBase), 100 * kRegion);
    asks.push_back(rec.regions.size() - before);
  }
  EXPECT_EQ(asks, (std::vector<size_t>{32, 32, 32, 32}));
  // The first 100 asks reached every region once, although the first 32
  // were due again from the third call.
  std::vector<uintptr_t> firstAsks(rec.regions.begin(), rec.regions.begin() + 100);
  std::sort(firstAsks.begin(), firstAsks.end());
  EXPECT_EQ(std::unique(firstAsks.begin(), firstAsks.end()), firstAsks.end()) << "a region asked twice before all were";
}

TEST(HugePageAdvisor, TheLargestWaitFitsForAnyCount) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(UINT32_MAX / 2);
  advisor.noteUse(at(kBase), kRegion);
  EXPECT_TRUE(rec.regions.empty());
}

TEST(HugePageAdvisor, OffWhenToldOrWithoutHugePages) {
  Recorder rec;
  HugePageAdvisor off = rec.advisor(0);
  HugePageAdvisor none(1, 0, [&rec](void*, size_t) {
    rec.regions.push_back(0);
    return 0;
  });
  for (int i = 0; i < 4; ++i) {
    off.noteUse(at(kBase), 4 * kRegion);
    none.noteUse(at(kBase), 4 * kRegion);
  }
  EXPECT_TRUE(rec.regions.empty());
}

TEST(HugePageAdvisor, TheTableOfRegionsStaysBounded) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1000);
  for (uintptr_t i = 0; i < 40000; ++i) advisor.noteUse(at(kBase + i * kRegion), kRegion);
  EXPECT_LE(advisor.trackedRegions(), 16384u);
  EXPECT_GT(advisor.trackedRegions(), 0u);
  // A single buffer over more regions than the table holds is left alone.
  advisor.noteUse(at(kBase), 20000 * kRegion);
  EXPECT_LE(advisor.trackedRegions(), 16384u);
  EXPECT_TRUE(rec.regions.empty());
}

}  // namespace
}  // namespace hcl
