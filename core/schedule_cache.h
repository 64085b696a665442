// Schedules kept across calls of the same shape, so a repeated small
// collective does not regenerate (and reallocate) its program every call.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/plan.h"
#include "collectives/plan/schedule.h"

namespace hcl {

// A schedule plus what the progress engine derives from it once.
struct PreparedSchedule {
  Schedule schedule;
  std::vector<int> transferPeer;  // per transfer: the peer it talks to
  std::vector<int> peers;         // every peer the schedule talks to, once
  bool direct = false;            // reads or writes peers' buffers
  bool stages = false;            // has Only::Staged steps: may go either way
};

std::shared_ptr<const PreparedSchedule> prepareSchedule(Schedule schedule);

// One per communicator, used by the holder of its execution gate.
class ScheduleCache {
 public:
  // The planner's schedule for `args`: from the cache when one of the same
  // shape was planned before, else planned (and kept if it is small). Shared,
  // so the cache may start afresh while runs still hold schedules; a loop of
  // small calls re-arms a kept run (core/kept_runs.h) and does not come here.
  std::shared_ptr<const PreparedSchedule> get(const Planner& planner, const CollArgs& args);
  size_t size() const { return entries_.size(); }

 private:
  struct Key {
    CollKind kind;
    hclDataType_t type;
    bool loadIsIdentity;
    bool rankDependentLoad;
    bool inPlace;
    int root;
    size_t count;
    size_t chunkBytes;
    const Topology* topology;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  // Entries stay where they are when the table grows, so last_ can point at one.
  std::unordered_map<Key, std::shared_ptr<const PreparedSchedule>, KeyHash> entries_;
  size_t totalSteps_ = 0;
  // A loop of one collective hits the same entry every call: checked first.
  Key lastKey_{};
  const std::shared_ptr<const PreparedSchedule>* last_ = nullptr;
};

}  // namespace hcl
