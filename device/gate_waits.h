// Which gate waits of a device are still pending, for the runtime calls that
// wait for the whole device (closing an IPC mapping, device.h). Made while a
// stream waits on a ticket that the calling thread would release, such a
// call never returns; so it is made only while no wait is pending, and no
// gate issues one meanwhile. Inline: the GPU plugins and the sim device
// share it, and the plugins link nothing of HCL's.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>

namespace hcl {

// Per device: the waits on tickets not yet released, over all its gates.
class PendingWaits {
 public:
  // Held shared by a gate while it issues a wait.
  std::shared_lock<std::shared_mutex> issuing() { return std::shared_lock(mutex_); }
  // Owns the lock only when no wait is pending; never waits for it, since
  // an issuer holding it may be stuck on a full command queue until the
  // caller, HCL's worker, releases a ticket.
  std::unique_lock<std::shared_mutex> quiet() {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock.owns_lock() && count_.load(std::memory_order_acquire) > 0) lock.unlock();
    return lock;
  }
  int64_t count() const { return count_.load(std::memory_order_acquire); }

 private:
  friend class GateWaits;
  std::shared_mutex mutex_;
  std::atomic<int64_t> count_{0};
};

// Per gate: the tickets its stream waits on that are not yet released.
class GateWaits {
 public:
  explicit GateWaits(std::shared_ptr<PendingWaits> device) : device_(std::move(device)) {}
  ~GateWaits() { device_->count_.fetch_sub(static_cast<int64_t>(waited_.size()), std::memory_order_release); }
  GateWaits(const GateWaits&) = delete;
  GateWaits& operator=(const GateWaits&) = delete;

  // Held while issuing a wait (PendingWaits::issuing).
  std::shared_lock<std::shared_mutex> issuing() { return device_->issuing(); }
  // The gate issued a wait on `ticket` (a released one passes at once).
  void waited(uint64_t ticket) {
    std::lock_guard lock(mutex_);
    if (ticket <= released_) return;
    waited_.push_back(ticket);
    device_->count_.fetch_add(1, std::memory_order_relaxed);
  }
  // The gate released every ticket up to `ticket`.
  void released(uint64_t ticket) {
    std::lock_guard lock(mutex_);
    if (ticket > released_) released_ = ticket;
    int64_t passed = 0;
    for (; !waited_.empty() && waited_.front() <= ticket; waited_.pop_front()) ++passed;
    device_->count_.fetch_sub(passed, std::memory_order_release);
  }

 private:
  const std::shared_ptr<PendingWaits> device_;
  std::mutex mutex_;
  uint64_t released_ = 0;
  std::deque<uint64_t> waited_;  // increasing
};

}  // namespace hcl
