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

// Messages of an exchange that ask singleCopyInstead() first, and go
// through the slots (next()) where it says no; returns how many went as
// single copies.
int runExchangeMessages(SlotStoreChoice& choice, int messages, uint64_t bytes, double bytesPerNs) {
  int single = 0;
  for (int i = 0; i < messages; ++i) {
    if (choice.singleCopyInstead(bytes)) {
      ++single;
      continue;
    }
    const SlotStoreChoice::Plan plan = choice.next(bytes);
    if (plan.timed) choice.record(bytes, static_cast<int64_t>(static_cast<double>(bytes) / bytesPerNs));
  }
  return single;
}

TEST(SlotStoreChoice, ExchangesGoThroughTheSlotsWhileCopiesRunFast) {
  SlotStoreChoice choice;
  EXPECT_EQ(runExchangeMessages(choice, 1000, kBytes, 20.0), 0);
}

TEST(SlotStoreChoice, ExchangesGoBySingleCopyWhileCopiesRunSlowlyButForTries) {
  SlotStoreChoice choice;
  runCopies(choice, 200, [](int) { return 2.5; });
  ASSERT_TRUE(choice.streaming());
  const int messages = 32 * static_cast<int>(SlotStoreChoice::kTryEvery);
  const int single = runExchangeMessages(choice, messages, kBytes, 2.5);
  EXPECT_TRUE(choice.streaming());
  EXPECT_EQ(single, messages - messages / static_cast<int>(SlotStoreChoice::kTryEvery));
}

TEST(SlotStoreChoice, ExchangesReturnToTheSlotsWhenTheirTriesRunFast) {
  SlotStoreChoice choice;
  runCopies(choice, 200, [](int) { return 2.5; });
  ASSERT_TRUE(choice.streaming());
  // The tries are the only copies timed: two fast ones turn it back.
  runExchangeMessages(choice, 3 * static_cast<int>(SlotStoreChoice::kTryEvery), kBytes, 20.0);
  EXPECT_FALSE(choice.streaming());
  EXPECT_EQ(runExchangeMessages(choice, 100, kBytes, 20.0), 0);
}

TEST(SlotStoreChoice, SmallExchangeMessagesStayInTheSlots) {
  SlotStoreChoice choice;
  runCopies(choice, 200, [](int) { return 2.5; });
  ASSERT_TRUE(choice.streaming());
  EXPECT_EQ(runExchangeMessages(choice, 100, SlotStoreChoice::kFromBytes - 1, 2.5), 0);
  SlotStoreChoice streamed(SlotStoreChoice::Mode::Streamed);
  EXPECT_FALSE(streamed.singleCopyInstead(SlotStoreChoice::kFromBytes - 1));
}

TEST(SlotStoreChoice, ForcedModesDecideExchangesToo) {
  SlotStoreChoice cached(SlotStoreChoice::Mode::Cached), streamed(SlotStoreChoice::Mode::Streamed);
  EXPECT_EQ(runExchangeMessages(cached, 500, kBytes, 1.0), 0);
  EXPECT_EQ(runExchangeMessages(streamed, 500, kBytes, 50.0), 500);
}

TEST(SlotStoreChoice, ForcedModesIgnoreTimes) {
  SlotStoreChoice cached(SlotStoreChoice::Mode::Cached), streamed(SlotStoreChoice::Mode::Streamed);
  EXPECT_EQ(runCopies(cached, 500, [](int) { return 1.0; }), 0);
  EXPECT_EQ(runCopies(streamed, 500, [](int) { return 50.0; }), 500);
}

}  // namespace
