#include "core/deadline.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace hcl {

namespace {

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

void Backoff::pause() {
  // While busy-polling, the first polls after progress do not even pause (a
  // reply already on its way is seen sooner) and the clock is read only every
  // few pauses, so a wait that ends within a microsecond takes no timestamp.
  constexpr uint32_t kPausesPerClockRead = 16;
  constexpr uint32_t kEagerPolls = 32;
  ++pauses_;
  const bool mayBeSpinning = spin_.count() > 0 && (spinning_ || idleSince_ == Clock::time_point{});
  if (mayBeSpinning && pauses_ <= kEagerPolls) return;
  if (mayBeSpinning && pauses_ % kPausesPerClockRead != 0) {
    relax();
    return;
  }
  const auto now = Clock::now();
  if (idleSince_ == Clock::time_point{}) {
    idleSince_ = now;
    sleeps_ = 0;
  }
  const auto idle = now - idleSince_;
  spinning_ = idle < spin_;
  if (spinning_) {
    relax();
  } else if (idle < spin_ + std::chrono::milliseconds(1)) {
    sched_yield();
  } else {
    sleeps_ = std::min<uint32_t>(sleeps_ + 1, 100);
    std::this_thread::sleep_for(std::chrono::microseconds(5 + sleeps_));
  }
}

}  // namespace hcl
