// A communicator's operations run in the order they were issued, whichever
// thread or stream worker runs them. NCCL serialises a communicator's work
// in launch order, and every rank must run the same sequence: without this,
// an operation queued on one stream and one issued later on another stream,
// or on none, could start in either order, and the ranks could disagree.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <vector>

namespace hcl {

class Communicator;

// Numbered turns on one communicator: each operation takes one when it is
// issued and runs when every earlier one has finished or been abandoned.
class IssueOrder {
 public:
  uint64_t take() { return issued_.fetch_add(1, std::memory_order_relaxed); }
  bool isTurn(uint64_t ticket) const { return next_.load(std::memory_order_acquire) == ticket; }
  // Every operation issued so far has finished or been abandoned.
  bool idle() const {
    return next_.load(std::memory_order_acquire) == issued_.load(std::memory_order_acquire);
  }
  // For a call that runs on the issuing thread before it returns: waits
  // until idle() (or `abort` is set). It takes no turn: as in NCCL, one
  // thread at a time issues on a communicator, so nothing can be issued
  // after this call until it returns.
  void waitUntilIdle(const std::atomic<bool>& abort, int64_t spinUs) const;
  // Busy-polls for spinUs, then sleeps until a turn ends (or wake()), until
  // `done()` or `abort` holds.
  template <typename Done>
  void waitUntil(Done done, const std::atomic<bool>& abort, int64_t spinUs) const;
  // Makes waiters look again: call after setting the abort flag.
  void wake();
  // The holder of `ticket` is done: the next turn may start.
  void finish(uint64_t ticket);
  // `ticket` will never run (its operation was dropped, or gave up waiting
  // because the communicator was aborted): the turns skip it.
  void abandon(uint64_t ticket);
  // Held while one launch takes turns on several communicators, so that two
  // such launches take theirs in the same order everywhere.
  std::mutex& takeMutex() { return takeMutex_; }

 private:
  void skipAbandoned();  // under abandonedMutex_

  std::atomic<uint64_t> issued_{0};
  std::atomic<uint64_t> next_{0};
  std::atomic<uint32_t> changes_{0};  // bumped by every change a waiter may wait for
  std::atomic<size_t> abandonedCount_{0};
  std::mutex abandonedMutex_;
  std::set<uint64_t> abandoned_;
  std::mutex takeMutex_;
};

// One operation's turn. Destroyed without having waited, it is abandoned;
// after waiting, it is finished.
class Turn {
 public:
  Turn() = default;
  explicit Turn(IssueOrder& order) : order_(&order), ticket_(order.take()) {}
  Turn(Turn&& other) noexcept { *this = std::move(other); }
  Turn& operator=(Turn&& other) noexcept;
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  ~Turn() { release(); }

  // Returns once every operation issued earlier on the communicator has
  // finished, or `abort` is set (the turn is then given up, and the caller's
  // operation fails on the aborted communicator as it would anyway).
  void wait(const std::atomic<bool>& abort, int64_t spinUs);
  // Lets the next operation start (also done by the destructor).
  void release();

 private:
  IssueOrder* order_ = nullptr;  // null: no turn (none taken, or released)
  uint64_t ticket_ = 0;
  bool held_ = false;  // waited for: released by finishing, not abandoning
};

// The turns of one launch on each of its communicators, taken together. It
// does not own the communicators: its holder keeps them alive until it has
// released the turns.
class Turns {
 public:
  Turns() = default;
  explicit Turns(std::vector<Communicator*> comms);
  // In address order, as every launch waits.
  void wait();
  // One communicator's turn, once its part of the launch is done, so that
  // its next operation need not wait for the launch's other parts.
  void release(const Communicator* comm);
  void release() { turns_.clear(); }

 private:
  std::vector<Communicator*> comms_;  // by address
  std::vector<Turn> turns_;           // one per communicator, in that order
};

template <typename Done>
void IssueOrder::waitUntil(Done done, const std::atomic<bool>& abort, int64_t spinUs) const {
  if (done()) return;  // the common case reads no clock
  const auto spinUntil = std::chrono::steady_clock::now() + std::chrono::microseconds(spinUs);
  do {
    if (done() || abort.load(std::memory_order_acquire)) return;
  } while (std::chrono::steady_clock::now() < spinUntil);
  for (;;) {
    const uint32_t seen = changes_.load(std::memory_order_acquire);
    if (done() || abort.load(std::memory_order_acquire)) return;
    changes_.wait(seen, std::memory_order_acquire);
  }
}

}  // namespace hcl
