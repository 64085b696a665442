// How a sender stores large messages into its FIFO slots: through the cache
// or past it. A store into a line its receiver read last waits until that
// copy is invalidated: cheap where the two CPUs share a cache, several times
// dearer where they do not (a virtual machine's host running its vCPUs
// apart, other sockets). There, storing past the cache took a 4-rank
// broadcast of 64-128 KiB a third to a fifth of the time; where the CPUs
// share a cache it makes the receiver read from memory instead, and
// exchanges took 1.3-2.2x as long (docs/performance.md). The sender tells
// the two apart by its own copies' speed: through the cache into slots its
// receiver has read, they ran at 2.3-3.1 GB/s with the vCPUs apart and at
// 7-35 GB/s with them close (at every size from 16 to 256 KiB). So it
// stores through the cache while the median of its last three timed copies
// stays above kSlowBytesPerNs, past the cache once it falls below, and while
// storing past the cache copies through it every kTryEvery copies, to notice
// when its CPUs come close again. One per connection, used by its sender.
// Its copies past the cache use nonTemporalCopy: streamingCopy keeps copies
// below 64 KiB in the cache, which left 16-64 KiB messages stored through
// it whatever the choice (docs/performance.md).
#pragma once

#include <array>
#include <cstdint>

namespace hcl::shm {

class SlotStoreChoice {
 public:
  enum class Mode { Measure, Cached, Streamed };
  explicit SlotStoreChoice(Mode mode = Mode::Measure) : mode_(mode) {}

  // For a copy of `bytes` into a slot: whether it should go past the cache,
  // and whether it should be timed (then record() follows with its time).
  struct Plan {
    bool stream = false;
    bool timed = false;
  };
  Plan next(uint64_t bytes);
  // A timed copy of `bytes` through the cache took `nanoseconds`.
  void record(uint64_t bytes, int64_t nanoseconds);
  bool streaming() const { return streaming_; }

  // Smaller copies are cheap either way, and a clock read costs a few percent of them.
  static constexpr uint64_t kFromBytes = 16 * 1024;
  static constexpr double kSlowBytesPerNs = 5.0;
  static constexpr uint32_t kTryEvery = 32;
  // While storing through the cache, one copy in this many is timed.
  static constexpr uint32_t kTimeEvery = 8;

 private:
  Mode mode_;
  bool streaming_ = false;
  uint32_t sinceTimed_ = 0;
  std::array<double, 3> recent_{};  // bytes per nanosecond of timed copies
  uint32_t samples_ = 0;
};

}  // namespace hcl::shm
