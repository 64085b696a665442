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
//
// Where the CPUs are apart, it also turns messages of exchanges, in which
// every rank sends and receives at once (the pairwise all-to-all), into
// single copies: the receiver reads them from the send buffer with
// process_vm_readv. 4 ranks on 2 vCPUs apart, all-to-all of 16 and 32 KiB
// blocks: 26 and 34 us that way, 40 and 76 through the slots (past the
// cache or through it alike), vader 37 and 51. With the vCPUs close, the
// slots stay ahead by as much (11 and 16 us against 26 and 35), so this
// follows the same measurement. A sender that waits for its reader costs
// nothing in an exchange, where it has receives of its own to wait for; a
// broadcast chain took 2-7 times as long that way.
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
  // For a message of `bytes` of an exchange, which could go as a single
  // copy: whether it should. Not one in kTryEvery while the CPUs are apart:
  // that one goes through the slots, where next() times a copy through the
  // cache, to notice when they come close again. Mode::Streamed acts as if
  // they were always apart, Mode::Cached as if never.
  bool singleCopyInstead(uint64_t bytes);

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
