// Runs of a communicator's recent collectives, kept to run again: a loop of
// small calls of one shape then builds its run once, not on every call.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "collectives/plan/collective.h"
#include "core/executor.h"

namespace hcl {

// What a collective's schedule depends on besides its communicator (the
// fields collArgsFor derives CollArgs from), packed so that matching a kept
// run is two compares.
struct RunShape {
  uint64_t count = 0;
  uint64_t rest = 0;  // kind, data type, pre-multiplied, in place, root
  static RunShape of(CollKind kind, size_t count, hclDataType_t type, bool preMulSum, bool inPlace, int root) {
    return {count, static_cast<uint64_t>(kind) | static_cast<uint64_t>(type) << 8 |
                       static_cast<uint64_t>(preMulSum) << 16 | static_cast<uint64_t>(inPlace) << 17 |
                       static_cast<uint64_t>(static_cast<uint32_t>(root)) << 32};
  }
  bool operator==(const RunShape&) const = default;
};

// Used only by the holder of the communicator's execution gate, one
// operation at a time: a run handed out is done with before the next call.
class KeptRuns {
 public:
  // A kept run of this shape, re-armed for these buffers; null when none
  // is kept (or the last one did not finish).
  ScheduleRun* rearm(RunShape shape, const void* send, void* recv, const ReduceSpec& spec, uint32_t tagSalt) {
    if (!holds(last_, shape) && !find(shape)) return nullptr;
    Kept& k = kept_[last_];
    if (!k.run->finished()) return nullptr;
    k.run->rearm(send, recv, spec, tagSalt);
    k.lastUse = ++uses_;
    return &*k.run;
  }
  // A new run of `prepared`, kept for calls of this shape in place of the
  // least recently used one; null when the schedule is not one a run can
  // rearm.
  ScheduleRun* keep(Communicator& comm, RunShape shape, const std::shared_ptr<const PreparedSchedule>& prepared,
                    const void* send, void* recv, const ReduceSpec& spec, uint32_t tagSalt);

 private:
  // A few shapes, so calls that alternate (a broadcast after each
  // allreduce) keep theirs too.
  static constexpr size_t kRuns = 4;
  bool holds(size_t i, RunShape shape) const { return kept_[i].run && kept_[i].shape == shape; }
  // Makes the run kept for `shape`, if any, the last used.
  bool find(RunShape shape);

  struct Kept {
    RunShape shape;
    std::optional<ScheduleRun> run;
    uint64_t lastUse = 0;
  };
  std::array<Kept, kRuns> kept_;
  size_t last_ = 0;  // the one used most recently: checked first
  uint64_t uses_ = 0;
};

}  // namespace hcl
