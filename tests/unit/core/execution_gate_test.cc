// The execution gate: one holder at a time, whichever path each thread takes;
// ownership goes to a thread that keeps entering, stays with an owner that
// keeps entering, and ends when the gate is retired, which waits for the
// owner to leave.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "core/execution_gate.h"

namespace hcl {
namespace {

using namespace std::chrono_literals;

#define SKIP_WITHOUT_OWNERS_PATH()                                                                     \
  if (!ExecutionGate::ownersPathAvailable()) {                                                         \
    GTEST_SKIP() << "no owner's path here (membarrier unavailable, or a ThreadSanitizer build): every " \
                    "thread takes the mutex";                                                          \
  }

void enterRepeatedly(ExecutionGate& gate, uint32_t times) {
  for (uint32_t i = 0; i < times; ++i) {
    ExecutionGate::Hold hold = gate.enter();
    ASSERT_TRUE(hold);
  }
}

bool ownsOnThisThread(ExecutionGate& gate) { return static_cast<bool>(gate.tryEnterAsOwner()); }

bool ownsOnAnotherThread(ExecutionGate& gate) {
  bool owns = false;
  std::thread([&] { owns = ownsOnThisThread(gate); }).join();
  return owns;
}

TEST(ExecutionGate, AThreadThatKeepsEnteringBecomesTheOwner) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  EXPECT_FALSE(ownsOnThisThread(gate));
  enterRepeatedly(gate, ExecutionGate::kRebiasAfter - 1);
  EXPECT_FALSE(ownsOnThisThread(gate));
  enterRepeatedly(gate, 1);
  EXPECT_TRUE(ownsOnThisThread(gate));
  EXPECT_TRUE(gate.enter().onOwnersPath());
  EXPECT_FALSE(ownsOnAnotherThread(gate));
}

TEST(ExecutionGate, OwnershipMovesToAnotherThreadOnceTheOwnerStops) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  enterRepeatedly(gate, ExecutionGate::kRebiasAfter);
  ASSERT_TRUE(ownsOnThisThread(gate));
  bool movedThere = false;
  std::thread([&] {
    enterRepeatedly(gate, ExecutionGate::kRebiasAfter);
    movedThere = ownsOnThisThread(gate);
  }).join();
  EXPECT_TRUE(movedThere);
  EXPECT_FALSE(ownsOnThisThread(gate));
  EXPECT_FALSE(gate.enter().onOwnersPath());
}

// This thread and another enter by turns, `rounds` times each.
void takeTurns(ExecutionGate& gate, uint32_t rounds) {
  std::atomic<int> turn{0};
  std::thread other([&] {
    for (uint32_t i = 0; i < rounds; ++i) {
      while (turn.load() != 1) std::this_thread::yield();
      { ExecutionGate::Hold hold = gate.enter(); }
      turn = 0;
    }
  });
  for (uint32_t i = 0; i < rounds; ++i) {
    { ExecutionGate::Hold hold = gate.enter(); }
    turn = 1;
    while (turn.load() != 0) std::this_thread::yield();
  }
  other.join();
}

TEST(ExecutionGate, OwnershipStaysWithAnOwnerThatKeepsEntering) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  enterRepeatedly(gate, ExecutionGate::kRebiasAfter);
  ASSERT_TRUE(ownsOnThisThread(gate));
  // The other thread enters more than kRebiasAfter times, but never twice
  // without an entry of the owner in between.
  takeTurns(gate, 2 * ExecutionGate::kRebiasAfter);
  EXPECT_TRUE(ownsOnThisThread(gate));
  EXPECT_FALSE(ownsOnAnotherThread(gate));
}

TEST(ExecutionGate, ThreadsThatKeepTakingTurnsEndOwnership) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  enterRepeatedly(gate, ExecutionGate::kRebiasAfter);
  ASSERT_TRUE(ownsOnThisThread(gate));
  takeTurns(gate, ExecutionGate::kRevocationsToShare);
  EXPECT_FALSE(ownsOnThisThread(gate));
  EXPECT_FALSE(ownsOnAnotherThread(gate));
  enterRepeatedly(gate, 2 * ExecutionGate::kRebiasAfter);
  EXPECT_FALSE(ownsOnThisThread(gate)) << "a gate shared by turns got an owner again";
}

// Ownership that moves in blocks (each thread enters kRebiasAfter times
// while the other rests) moves every time and never ends: the revocations
// each move costs are not counted as threads taking turns.
TEST(ExecutionGate, OwnershipMovesBackAndForthInBlocks) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  constexpr uint32_t kMoves = 3 * ExecutionGate::kRevocationsToShare / ExecutionGate::kRebiasAfter;
  std::atomic<uint32_t> move{0};
  std::atomic<uint32_t> ownedAfterItsBlock{0};
  auto side = [&](uint32_t parity) {
    for (uint32_t m = parity; m < kMoves; m += 2) {
      while (move.load() != m) std::this_thread::yield();
      enterRepeatedly(gate, ExecutionGate::kRebiasAfter);
      if (ownsOnThisThread(gate)) ownedAfterItsBlock.fetch_add(1);
      move = m + 1;
    }
  };
  std::thread a(side, 0u), b(side, 1u);
  a.join();
  b.join();
  EXPECT_EQ(ownedAfterItsBlock.load(), kMoves);
}

// Makes this thread the owner and holds the gate on the owner's path while
// another thread runs `action`, which must not finish before the hold ends.
void expectActionToWaitForTheOwner(ExecutionGate& gate, const std::function<void()>& action, const char* what) {
  enterRepeatedly(gate, ExecutionGate::kRebiasAfter);
  ExecutionGate::Hold held = gate.tryEnterAsOwner();
  ASSERT_TRUE(held);
  std::atomic<bool> done{false};
  std::thread other([&] {
    action();
    done = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(done.load()) << what << " while the owner held the gate";
  held.release();
  other.join();
  EXPECT_TRUE(done.load());
}

TEST(ExecutionGate, AnotherThreadWaitsUntilTheOwnerLeaves) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  expectActionToWaitForTheOwner(gate, [&] { ExecutionGate::Hold hold = gate.enter(); }, "a second thread entered");
}

TEST(ExecutionGate, RetireWaitsForTheOwnerAndEndsTheOwnersPath) {
  SKIP_WITHOUT_OWNERS_PATH();
  ExecutionGate gate;
  expectActionToWaitForTheOwner(gate, [&] { gate.retire(); }, "retire returned");
  EXPECT_FALSE(ownsOnThisThread(gate));
  // Entries still work, on the mutex, and make no new owner.
  enterRepeatedly(gate, 2 * ExecutionGate::kRebiasAfter);
  EXPECT_FALSE(ownsOnThisThread(gate));
}

// Three threads, one of them the owner most of the time, each adding to a
// plain counter under the gate. A second holder at any moment shows as an
// occupancy above one, or as lost additions.
TEST(ExecutionGate, HoldersExcludeEachOther) {
  ExecutionGate gate;
  constexpr int kThreads = 3;
  constexpr int kOwnerEntries = 200000, kOtherEntries = 300;
  std::atomic<int> occupancy{0};
  std::atomic<bool> overlapped{false};
  int64_t counter = 0;  // plain: only a holder touches it
  std::atomic<int> ownersPathEntries{0};
  auto work = [&](ExecutionGate::Hold& hold) {
    if (occupancy.fetch_add(1) != 0) overlapped = true;
    const int64_t seen = counter;
    volatile int widenTheWindow = 0;
    for (int spin = 0; spin < 20; ++spin) widenTheWindow = widenTheWindow + 1;
    counter = seen + 1;
    occupancy.fetch_sub(1);
    hold.release();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int entries = t == 0 ? kOwnerEntries : kOtherEntries;
      for (int i = 0; i < entries; ++i) {
        ExecutionGate::Hold hold = gate.enter();
        if (t == 0 && hold.onOwnersPath()) ownersPathEntries.fetch_add(1, std::memory_order_relaxed);
        work(hold);
        if (t != 0) std::this_thread::sleep_for(50us);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlapped.load());
  EXPECT_EQ(counter, kOwnerEntries + (kThreads - 1) * kOtherEntries);
  if (ExecutionGate::ownersPathAvailable()) {
    EXPECT_GT(ownersPathEntries.load(), 0) << "the busy thread never entered on the owner's path";
  }
}

}  // namespace
}  // namespace hcl
