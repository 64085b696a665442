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
  // The first polls after progress do not even pause (a reply already on
  // its way is seen sooner), and the clock is read only every few pauses
  // (or before each sleep), so a short wait takes no timestamp: in a VM a
  // clock read can cost more than the poll it paces.
  constexpr uint32_t kPausesPerClockRead = 16;
  constexpr uint32_t kEagerPolls = 32;
  ++pauses_;
  if (mode_ == Mode::Spin && pauses_ <= kEagerPolls) return;
  if (mode_ == Mode::Sleep || pauses_ % kPausesPerClockRead == 0) {
    const auto now = Clock::now();
    if (idleSince_ == Clock::time_point{}) {
      idleSince_ = now;
      sleeps_ = 0;
    }
    const auto idle = now - idleSince_;
    mode_ = idle < spin_ ? Mode::Spin : idle < spin_ + std::chrono::milliseconds(1) ? Mode::Yield : Mode::Sleep;
  }
  switch (mode_) {
    case Mode::Spin: relax(); break;
    case Mode::Yield: sched_yield(); break;
    case Mode::Sleep:
      sleeps_ = std::min<uint32_t>(sleeps_ + 1, 100);
      std::this_thread::sleep_for(std::chrono::microseconds(5 + sleeps_));
      break;
  }
}

}  // namespace hcl
