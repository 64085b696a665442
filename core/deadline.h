// A point in time after which a wait gives up, plus the abort flag every wait checks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hcl {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  explicit Deadline(int64_t timeoutMs)
      : end_(timeoutMs <= 0 ? Clock::time_point::max()
                            : Clock::now() + std::chrono::milliseconds(timeoutMs)) {}
  bool expired() const { return Clock::now() >= end_; }
  Clock::time_point end() const { return end_; }

 private:
  Clock::time_point end_;
};

// Spin briefly, then yield, then sleep with a growing interval (up to maxSleepUs).
class Backoff {
 public:
  void reset() { spins_ = 0; }
  void pause();

 private:
  uint32_t spins_ = 0;
};

}  // namespace hcl
