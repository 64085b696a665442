#include "core/issue_order.h"

#include <algorithm>
#include <utility>

#include "core/communicator.h"

namespace hcl {

void IssueOrder::finish(uint64_t ticket) {
  // Sequentially consistent with abandon(): either this sees a count that
  // abandon() raised, or abandon() sees this turn's successor as next.
  next_.store(ticket + 1, std::memory_order_seq_cst);
  if (abandonedCount_.load(std::memory_order_seq_cst) != 0) {
    std::lock_guard lock(abandonedMutex_);
    skipAbandoned();
  }
  wake();
}

void IssueOrder::wake() {
  // After the change it announces: a waiter that read the old count before
  // looking at the change then finds the count moved and looks again.
  changes_.fetch_add(1, std::memory_order_seq_cst);
  changes_.notify_all();
}

void IssueOrder::abandon(uint64_t ticket) {
  std::lock_guard lock(abandonedMutex_);
  abandoned_.insert(ticket);
  abandonedCount_.fetch_add(1, std::memory_order_seq_cst);
  skipAbandoned();
  wake();
}

void IssueOrder::skipAbandoned() {
  // No turn is held while next_ names an abandoned ticket, so only this
  // (under the mutex) moves next_ on from there.
  for (;;) {
    const uint64_t next = next_.load(std::memory_order_seq_cst);
    const auto it = abandoned_.find(next);
    if (it == abandoned_.end()) return;
    abandoned_.erase(it);
    abandonedCount_.fetch_sub(1, std::memory_order_seq_cst);
    next_.store(next + 1, std::memory_order_seq_cst);
  }
}

void IssueOrder::waitUntilIdle(const std::atomic<bool>& abort, int64_t spinUs) const {
  waitUntil([this] { return idle(); }, abort, spinUs);
}

Turn& Turn::operator=(Turn&& other) noexcept {
  if (this != &other) {
    release();
    order_ = std::exchange(other.order_, nullptr);
    ticket_ = other.ticket_;
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

void Turn::wait(const std::atomic<bool>& abort, int64_t spinUs) {
  if (!order_ || held_) return;
  order_->waitUntil([this] { return order_->isTurn(ticket_); }, abort, spinUs);
  if (order_->isTurn(ticket_)) {
    held_ = true;
  } else {
    release();  // aborted: the turn is abandoned
  }
}

void Turn::release() {
  if (!order_) return;
  if (held_) {
    order_->finish(ticket_);
  } else {
    order_->abandon(ticket_);
  }
  order_ = nullptr;
  held_ = false;
}

Turns::Turns(std::vector<Communicator*> comms) : comms_(std::move(comms)) {
  std::sort(comms_.begin(), comms_.end());
  comms_.erase(std::unique(comms_.begin(), comms_.end()), comms_.end());
  turns_.reserve(comms_.size());
  if (comms_.size() == 1) {
    turns_.emplace_back(comms_[0]->issueOrder());
    return;
  }
  std::vector<std::unique_lock<std::mutex>> locks;
  for (Communicator* c : comms_) locks.emplace_back(c->issueOrder().takeMutex());
  for (Communicator* c : comms_) turns_.emplace_back(c->issueOrder());
}

void Turns::release(const Communicator* comm) {
  const auto it = std::lower_bound(comms_.begin(), comms_.end(), comm);
  if (it != comms_.end() && *it == comm) turns_[static_cast<size_t>(it - comms_.begin())].release();
}

void Turns::wait() {
  for (size_t i = 0; i < turns_.size(); ++i) turns_[i].wait(comms_[i]->abortFlag(), comms_[i]->settings().spinUs);
}

}  // namespace hcl
