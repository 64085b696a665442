#include "core/deadline.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace hcl {

void Backoff::pause() {
  const auto now = Clock::now();
  if (idleSince_ == Clock::time_point{}) {
    idleSince_ = now;
    sleeps_ = 0;
  }
  const auto idle = now - idleSince_;
  if (idle < spin_) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else if (idle < spin_ + std::chrono::milliseconds(1)) {
    sched_yield();
  } else {
    sleeps_ = std::min<uint32_t>(sleeps_ + 1, 100);
    std::this_thread::sleep_for(std::chrono::microseconds(5 + sleeps_));
  }
}

}  // namespace hcl
