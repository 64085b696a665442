// A communicator's scratch: regions handed out in turn, and which of them
// a call faults in for the first time (Communicator::acquireScratch).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <memory>
#include <set>

#include "core/communicator.h"
#include "core/shared_allocations.h"

namespace {


TEST(Scratch, TurnsHandOutSuccessiveRegionsFreshOnlyOnce) {
  auto comm = std::make_unique<hcl::Communicator>(0, 1, std::array<uint8_t, 16>{}.data(), 1, hcl::CommSettings{});
  constexpr size_t kBytes = 300 * 1024, kTurns = 4;
  std::set<std::byte*> regions;
  for (size_t call = 0; call < 2 * kTurns; ++call) {
    bool fresh = false;
    std::byte* at = comm->acquireScratch(kBytes, kTurns, &fresh);
    EXPECT_EQ(fresh, call < kTurns) << call;
    regions.insert(at);
    comm->scratchStaged();
    comm->releaseScratch();
  }
  ASSERT_EQ(regions.size(), kTurns);
  // The regions do not overlap.
  std::byte* previous = nullptr;
  for (std::byte* at : regions) {
    if (previous) {
      EXPECT_GE(static_cast<size_t>(at - previous), kBytes);
    }
    previous = at;
  }
  // One turn: the same region every call, fresh the first time only.
  bool fresh = false;
  std::byte* once = comm->acquireScratch(kBytes, 1, &fresh);
  EXPECT_FALSE(fresh);  // within what the turns handed out
  EXPECT_EQ(comm->acquireScratch(kBytes, 1, &fresh), once);
  EXPECT_FALSE(fresh);
  // Growing past the buffer starts afresh.
  comm->acquireScratch(kTurns * kBytes * 2, 1, &fresh);
  EXPECT_TRUE(fresh);
}

// Scratch that peers map is shared memory: large scratch, and small windows
// that rotate through regions large together; small scratch used alone
// stays on the heap.
TEST(Scratch, SmallRotatedWindowsAreShared) {
  auto comm = std::make_unique<hcl::Communicator>(0, 1, std::array<uint8_t, 16>{}.data(), 1, hcl::CommSettings{});
  constexpr size_t kSmall = 128 * 1024;
  std::byte* alone = comm->acquireScratch(kSmall, 1);
  EXPECT_FALSE(hcl::findSharedAllocation(alone, kSmall).has_value());
  comm->releaseScratch();
  std::byte* rotated = comm->acquireScratch(kSmall, 8);
  EXPECT_TRUE(hcl::findSharedAllocation(rotated, kSmall).has_value());
  comm->releaseScratch();
}

// Peers map a scratch when a run first stages through it: until one has,
// every call on it is fresh. Only calls that stage turn to the next region.
TEST(Scratch, FreshUntilARunStagesThroughItAndOnlyStagingTurns) {
  auto comm = std::make_unique<hcl::Communicator>(0, 1, std::array<uint8_t, 16>{}.data(), 1, hcl::CommSettings{});
  constexpr size_t kBytes = 300 * 1024, kTurns = 2;
  bool fresh = false;
  std::byte* first = comm->acquireScratch(kBytes, kTurns, &fresh);
  EXPECT_TRUE(fresh);
  comm->releaseScratch();
  for (size_t call = 0; call < 3; ++call) {
    EXPECT_EQ(comm->acquireScratch(kBytes, kTurns, &fresh), first) << call;
    EXPECT_TRUE(fresh) << call;
    comm->releaseScratch();
  }
  comm->acquireScratch(kBytes, kTurns, &fresh);
  comm->scratchStaged();
  comm->releaseScratch();
  std::byte* second = comm->acquireScratch(kBytes, kTurns, &fresh);
  EXPECT_NE(second, first);
  EXPECT_TRUE(fresh);  // handed out for the first time
  comm->scratchStaged();
  comm->releaseScratch();
  EXPECT_EQ(comm->acquireScratch(kBytes, kTurns, &fresh), first);
  EXPECT_FALSE(fresh);
  comm->releaseScratch();
}

}  // namespace
