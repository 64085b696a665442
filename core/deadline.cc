#include "core/deadline.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace hcl {

void Backoff::pause() {
  // Spin first (the latency path), then yield the core, then sleep with a
  // growing interval so an idle wait costs little CPU on a 2-core machine.
  constexpr uint32_t kSpin = 200, kYield = 2000;
  ++spins_;
  if (spins_ < kSpin) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else if (spins_ < kYield) {
    sched_yield();
  } else {
    const uint32_t extra = std::min<uint32_t>(spins_ - kYield, 100);
    std::this_thread::sleep_for(std::chrono::microseconds(5 + extra));
  }
}

}  // namespace hcl
