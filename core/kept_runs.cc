#include "core/kept_runs.h"

namespace hcl {

bool KeptRuns::find(RunShape shape) {
  for (size_t i = 0; i < kRuns; ++i) {
    if (holds(i, shape)) {
      last_ = i;
      return true;
    }
  }
  return false;
}

ScheduleRun* KeptRuns::keep(Communicator& comm, RunShape shape,
                            const std::shared_ptr<const PreparedSchedule>& prepared,
                            const void* send, void* recv, const ReduceSpec& spec, uint32_t tagSalt) {
  if (!ScheduleRun::rearmable(*prepared)) return nullptr;
  // The same shape's slot when it is there (its run did not finish), else
  // an empty one, else the least recently used.
  size_t victim = 0;
  for (size_t i = 0; i < kRuns; ++i) {
    if (holds(i, shape)) {
      victim = i;
      break;
    }
    if (!kept_[i].run) {
      victim = i;
    } else if (kept_[victim].run && kept_[i].lastUse < kept_[victim].lastUse) {
      victim = i;
    }
  }
  Kept& k = kept_[victim];
  k.run.reset();
  k.run.emplace(comm, prepared, RunBuffers{send, recv, {}}, spec, tagSalt);
  k.shape = shape;
  k.lastUse = ++uses_;
  last_ = victim;
  return &*k.run;
}

}  // namespace hcl
