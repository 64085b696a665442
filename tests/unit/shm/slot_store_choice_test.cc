// The sender's choice between storing large messages into FIFO slots
// through the cache or past it (transports/shm/slot_store_choice.h), fed
// with copy times.
#include "transports/shm/slot_store_choice.h"

#include <gtest/gtest.h>

#include <functional>

namespace {

using hcl::shm::SlotStoreChoice;

constexpr uint64_t kBytes = 64 * 1024;

// Runs `copies` copies of kBytes, timing those the choice asks for at
// `bytesPerNs(copy)`; returns how many went past the cache.
int runCopies(SlotStoreChoice& choice, int copies, const std::function<double(int)>& bytesPerNs) {
  int streamed = 0;
  for (int i = 0; i < copies; ++i) {
    const SlotStoreChoice::Plan plan = choice.next(kBytes);
    EXPECT_FALSE(plan.stream && plan.timed);
    streamed += plan.stream ? 1 : 0;
    if (plan.timed) choice.record(kBytes, static_cast<int64_t>(static_cast<double>(kBytes) / bytesPerNs(i)));
  }
  return streamed;
}

TEST(SlotStoreChoice, FastCopiesStayInTheCache) {
  SlotStoreChoice choice;
  EXPECT_EQ(runCopies(choice, 1000, [](int) { return 20.0; }), 0);
  EXPECT_FALSE(choice.streaming());
}

TEST(SlotStoreChoice, SlowCopiesGoPastTheCacheButForTries) {
  SlotStoreChoice choice;
  const int copies = 3200;
  const int streamed = runCopies(choice, copies, [](int) { return 2.5; });
  EXPECT_TRUE(choice.streaming());
  // Three timed copies (one in kTimeEvery) to decide, then one try in kTryEvery.
  const int before = 3 * static_cast<int>(SlotStoreChoice::kTimeEvery);
  const int tries = (copies - before) / static_cast<int>(SlotStoreChoice::kTryEvery);
  EXPECT_EQ(streamed, copies - before - tries);
}

TEST(SlotStoreChoice, ReturnsToTheCacheWhenCopiesSpeedUp) {
  SlotStoreChoice choice;
  runCopies(choice, 200, [](int) { return 2.5; });
  ASSERT_TRUE(choice.streaming());
  // Two fast tries outvote the slow sample left: back within three tries.
  runCopies(choice, 3 * static_cast<int>(SlotStoreChoice::kTryEvery), [](int) { return 20.0; });
  EXPECT_FALSE(choice.streaming());
  EXPECT_EQ(runCopies(choice, 100, [](int) { return 20.0; }), 0);
}

TEST(SlotStoreChoice, OneSlowCopyDoesNotTurnIt) {
  SlotStoreChoice choice;
  runCopies(choice, 400, [](int i) { return i == 200 ? 1.0 : 20.0; });
  EXPECT_FALSE(choice.streaming());
}

TEST(SlotStoreChoice, SmallCopiesAreNeitherTimedNorStreamed) {
  SlotStoreChoice choice;
  runCopies(choice, 200, [](int) { return 2.5; });
  ASSERT_TRUE(choice.streaming());
  for (int i = 0; i < 100; ++i) {
    const SlotStoreChoice::Plan plan = choice.next(SlotStoreChoice::kFromBytes - 1);
    EXPECT_FALSE(plan.stream);
    EXPECT_FALSE(plan.timed);
  }
}

TEST(SlotStoreChoice, ForcedModesIgnoreTimes) {
  SlotStoreChoice cached(SlotStoreChoice::Mode::Cached), streamed(SlotStoreChoice::Mode::Streamed);
  EXPECT_EQ(runCopies(cached, 500, [](int) { return 1.0; }), 0);
  EXPECT_EQ(runCopies(streamed, 500, [](int) { return 50.0; }), 500);
}

}  // namespace
