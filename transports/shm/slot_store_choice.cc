#include "transports/shm/slot_store_choice.h"

#include <algorithm>

namespace hcl::shm {

SlotStoreChoice::Plan SlotStoreChoice::next(uint64_t bytes) {
  if (bytes < kFromBytes || mode_ == Mode::Cached) return {};
  if (mode_ == Mode::Streamed) return {.stream = true, .timed = false};
  const uint32_t every = streaming_ ? kTryEvery : kTimeEvery;
  if (++sinceTimed_ < every) return {.stream = streaming_, .timed = false};
  sinceTimed_ = 0;
  return {.stream = false, .timed = true};
}

void SlotStoreChoice::record(uint64_t bytes, int64_t nanoseconds) {
  const double bytesPerNs = static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(nanoseconds, 1));
  recent_[samples_ % recent_.size()] = bytesPerNs;
  ++samples_;
  if (samples_ < recent_.size()) return;
  std::array<double, 3> sorted = recent_;
  std::sort(sorted.begin(), sorted.end());
  streaming_ = sorted[1] < kSlowBytesPerNs;
}

}  // namespace hcl::shm
