// HugePageAdvisor's counting, over a recorded stand-in for madvise: which
// regions a buffer touches, when each one's turn comes, and what a refusal
// or a passing failure does. The real madvise is exercised by
// tests/integration/huge_pages_test.cc.
#include "core/huge_pages.h"

#include <gtest/gtest.h>

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
};

TEST(HugePageAdvisor, CollapsesEveryRegionABufferTouchesOnItsTurn) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(3);
  // Starts inside the first region and ends inside the third.
  const void* p = at(kBase + 4096);
  const size_t bytes = 2 * kRegion + 8192;
  advisor.noteUse(p, bytes);
  advisor.noteUse(p, bytes);
  EXPECT_TRUE(rec.regions.empty());
  advisor.noteUse(p, bytes);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase, kBase + kRegion, kBase + 2 * kRegion}));
  EXPECT_EQ(advisor.stats().collapsed, 3u);
  // Asked again every third use: a cheap check while the regions stay huge.
  rec.regions.clear();
  for (int i = 0; i < 3; ++i) advisor.noteUse(p, bytes);
  EXPECT_EQ(rec.regions.size(), 3u);
  EXPECT_EQ(advisor.stats().collapsed, 6u);
}

TEST(HugePageAdvisor, CountsUsesPerRegionAcrossBuffers) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(2);
  // Two calls of different sizes over the start of one allocation share its
  // first region; the second region is used by the larger call only.
  advisor.noteUse(at(kBase), kRegion);
  advisor.noteUse(at(kBase), 2 * kRegion);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase}));
  advisor.noteUse(at(kBase + kRegion), kRegion);
  EXPECT_EQ(rec.regions, (std::vector<uintptr_t>{kBase, kBase + kRegion}));
}

TEST(HugePageAdvisor, LeavesBuffersUnderHalfARegionAlone) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1);
  advisor.noteUse(at(kBase), kRegion / 2 - 1);
  advisor.noteUse(at(kBase + 100), 64);
  advisor.noteUse(nullptr, 0);
  EXPECT_TRUE(rec.regions.empty());
  advisor.noteUse(at(kBase), kRegion / 2);
  EXPECT_EQ(rec.regions.size(), 1u);
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

TEST(HugePageAdvisor, ARefusedRegionIsNotAskedAgain) {
  Recorder rec;
  rec.answer = EINVAL;  // e.g. MADV_NOHUGEPAGE, or a kernel without MADV_COLLAPSE
  HugePageAdvisor advisor = rec.advisor(2);
  for (int i = 0; i < 10; ++i) advisor.noteUse(at(kBase), kRegion);
  EXPECT_EQ(rec.regions.size(), 1u);
  EXPECT_EQ(advisor.stats().refused, 1u);
  EXPECT_EQ(advisor.stats().collapsed, 0u);
}

TEST(HugePageAdvisor, AFailureForNowIsAskedAgainOnTheNextTurn) {
  Recorder rec;
  rec.answer = EAGAIN;  // no huge page free at the moment
  HugePageAdvisor advisor = rec.advisor(2);
  for (int i = 0; i < 4; ++i) advisor.noteUse(at(kBase), kRegion);
  EXPECT_EQ(rec.regions.size(), 2u);
  EXPECT_EQ(advisor.stats().failed, 2u);
  rec.answer = 0;
  advisor.noteUse(at(kBase), kRegion);
  advisor.noteUse(at(kBase), kRegion);
  EXPECT_EQ(advisor.stats().collapsed, 1u);
}

TEST(HugePageAdvisor, TheTableOfRegionsStaysBounded) {
  Recorder rec;
  HugePageAdvisor advisor = rec.advisor(1000);
  for (uintptr_t i = 0; i < 40000; ++i) advisor.noteUse(at(kBase + i * kRegion), kRegion);
  EXPECT_LE(advisor.trackedRegions(), 16384u);
  EXPECT_GT(advisor.trackedRegions(), 0u);
  EXPECT_TRUE(rec.regions.empty());
}

}  // namespace
}  // namespace hcl
