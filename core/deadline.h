// A point in time after which a wait gives up, and how a waiting thread
// spends its time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

namespace hcl {

using Clock = std::chrono::steady_clock;

// The monotonic clock at the kernel tick's resolution (a few ms), for
// rate-limiting checks on hot paths: a quarter of steady_clock's cost here.
struct CoarseClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<CoarseClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
  }
};

class Deadline {
 public:
  // No deadline for timeoutMs <= 0, nor for one beyond what the clock holds.
  explicit Deadline(int64_t timeoutMs) : end_(Clock::time_point::max()) {
    const Clock::time_point now = Clock::now();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
    if (timeoutMs > 0 && timeoutMs < left.count()) end_ = now + std::chrono::milliseconds(timeoutMs);
  }
  bool expired() const { return Clock::now() >= end_; }
  Clock::time_point end() const { return end_; }
  // The same deadline, `more` later (none stays none).
  Deadline later(std::chrono::milliseconds more) const {
    Deadline d = *this;
    if (end_ != Clock::time_point::max() && Clock::time_point::max() - end_ > more) d.end_ += more;
    return d;
  }

 private:
  Clock::time_point end_;
};

// Busy-polls for spinUs after the last progress (the latency path), then
// yields the core for about a millisecond, then sleeps with a growing
// interval so an idle wait costs little CPU.
class Backoff {
 public:
  explicit Backoff(int64_t spinUs = 50) : spin_(std::chrono::microseconds(spinUs)) { reset(); }
  void reset() {
    idleSince_ = {};
    pauses_ = 0;
    mode_ = spin_.count() > 0 ? Mode::Spin : Mode::Yield;
  }
  void pause();

 private:
  enum class Mode : uint8_t { Spin, Yield, Sleep };
  std::chrono::microseconds spin_;
  Clock::time_point idleSince_{};
  uint32_t sleeps_ = 0;
  uint32_t pauses_ = 0;
  Mode mode_ = Mode::Spin;
};

}  // namespace hcl
