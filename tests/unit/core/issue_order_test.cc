// The turns that keep a communicator's operations in issue order: an
// abandoned turn is skipped whenever it is abandoned, and a wait gives up
// when the communicator is aborted.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/issue_order.h"

namespace hcl {
namespace {

// Waits for the turn and ends it at once.
void runTurn(Turn& turn) {
  const std::atomic<bool> notAborted{false};
  turn.wait(notAborted, 0);
  turn.release();
}

TEST(IssueOrder, TurnsComeInTicketOrder) {
  IssueOrder order;
  std::atomic<bool> abort{false};
  Turn first(order), second(order);
  EXPECT_FALSE(order.isTurn(1));
  first.wait(abort, 0);
  EXPECT_TRUE(order.isTurn(0));
  first.release();
  EXPECT_TRUE(order.isTurn(1));
  runTurn(second);
  EXPECT_TRUE(order.isTurn(2));
}

TEST(IssueOrder, AnAbandonedTurnIsSkippedBeforeAndAfterItComesUp) {
  IssueOrder order;
  std::atomic<bool> abort{false};
  Turn a(order);
  {
    Turn dropped(order);  // never waited for: abandoned while `a` runs
  }
  Turn c(order);
  runTurn(a);
  ASSERT_TRUE(order.isTurn(2)) << "the abandoned turn 1 was not skipped";
  c.wait(abort, 0);
  Turn d(order);
  Turn e(order);
  c.release();
  ASSERT_TRUE(order.isTurn(3));
  d = Turn();  // abandoned once it is its turn
  ASSERT_TRUE(order.isTurn(4));
  runTurn(e);
  EXPECT_TRUE(order.isTurn(5));
}

TEST(IssueOrder, AWaitingTurnWaitsForTheEarlierOne) {
  IssueOrder order;
  std::atomic<bool> abort{false};
  Turn first(order), second(order);
  first.wait(abort, 0);
  std::atomic<bool> secondRan{false};
  std::thread t([&] {
    second.wait(abort, 0);
    secondRan = true;
    second.release();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(secondRan.load()) << "the later turn started before the earlier one finished";
  first.release();
  t.join();
  EXPECT_TRUE(secondRan.load());
  EXPECT_TRUE(order.isTurn(2));
}

TEST(IssueOrder, AnAbortEndsTheWaitAndTheTurnIsSkippedLater) {
  IssueOrder order;
  std::atomic<bool> abort{false};
  Turn first(order), second(order), third(order);
  first.wait(abort, 0);
  std::thread t([&] { second.wait(abort, 0); });
  abort = true;
  order.wake();  // as Communicator::requestAbort does after setting the flag
  t.join();      // returns although `first` still holds its turn
  abort = false;
  first.release();
  ASSERT_TRUE(order.isTurn(2)) << "the turn given up on abort was not skipped";
  runTurn(third);
  second.release();  // gave up: nothing left to do
  EXPECT_TRUE(order.isTurn(3));
}

TEST(IssueOrder, IdleOnceEveryIssuedTurnHasEnded) {
  IssueOrder order;
  std::atomic<bool> abort{false};
  EXPECT_TRUE(order.idle());
  Turn a(order);
  {
    Turn b(order);
    EXPECT_FALSE(order.idle());
    a.wait(abort, 0);
    a.release();
    EXPECT_FALSE(order.idle()) << "b is still outstanding";
  }
  EXPECT_TRUE(order.idle());
  order.waitUntilIdle(abort, 0);
  Turn c(order);
  abort = true;
  order.waitUntilIdle(abort, 0);  // returns on abort although c is outstanding
  EXPECT_FALSE(order.idle());
}

// Abandoning and finishing race from two threads: every turn still comes.
TEST(IssueOrder, AbandonRacingFinishLosesNoTurn) {
  for (int round = 0; round < 2000; ++round) {
    IssueOrder order;
    std::atomic<bool> abort{false};
    Turn held(order), dropped(order), last(order);
    held.wait(abort, 0);
    std::thread t([&] { dropped.release(); });
    held.release();
    t.join();
    ASSERT_TRUE(order.isTurn(2)) << "round " << round;
  }
}

}  // namespace
}  // namespace hcl
