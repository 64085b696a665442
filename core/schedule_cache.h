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
};

std::shared_ptr<const PreparedSchedule> prepareSchedule(Schedule schedule);

class ScheduleCache;

// A run's hold on its schedule. One from the cache is lent: the cache frees
// none of its schedules while any is on lease. The count is a plain integer,
// since leases are taken and ended by the holder of the communicator's
// execution gate; sharing ownership instead cost two atomic operations per
// call, about 8% of a one-rank 8-byte allreduce. Any other schedule is owned.
class ScheduleLease {
 public:
  explicit ScheduleLease(std::shared_ptr<const PreparedSchedule> owned)
      : schedule_(owned.get()), owned_(std::move(owned)) {}
  ScheduleLease(ScheduleLease&& other) noexcept;
  ScheduleLease& operator=(ScheduleLease&&) = delete;
  ScheduleLease(const ScheduleLease&) = delete;
  ~ScheduleLease();
  const PreparedSchedule& operator*() const { return *schedule_; }
  const PreparedSchedule* operator->() const { return schedule_; }
  const PreparedSchedule* get() const { return schedule_; }

 private:
  friend class ScheduleCache;
  ScheduleLease(const PreparedSchedule* lent, ScheduleCache* lender) : schedule_(lent), lender_(lender) {}
  const PreparedSchedule* schedule_;
  ScheduleCache* lender_ = nullptr;
  std::shared_ptr<const PreparedSchedule> owned_;
};

// One per communicator, used by the holder of its execution gate.
class ScheduleCache {
 public:
  // The planner's schedule for `args`: from the cache when one of the same
  // shape was planned before, else planned (and kept if it is small).
  ScheduleLease get(const Planner& planner, const CollArgs& args);
  // The same schedule, shared: for a holder that keeps it across calls
  // (core/kept_runs.h), so the cache may still start afresh meanwhile.
  std::shared_ptr<const PreparedSchedule> share(const Planner& planner, const CollArgs& args);
  size_t size() const { return entries_.size(); }
  size_t leases() const { return leases_; }

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
  // The cached entry for `args`, or null with `uncached` set to a schedule
  // the cache does not keep.
  const std::shared_ptr<const PreparedSchedule>* lookup(const Planner& planner, const CollArgs& args,
                                                         std::shared_ptr<const PreparedSchedule>& uncached);

  // Entries stay where they are when the table grows, so last_ can point at one.
  std::unordered_map<Key, std::shared_ptr<const PreparedSchedule>, KeyHash> entries_;
  size_t totalSteps_ = 0;
  // A loop of one collective hits the same entry every call: checked first.
  Key lastKey_{};
  const std::shared_ptr<const PreparedSchedule>* last_ = nullptr;
  size_t leases_ = 0;
  friend class ScheduleLease;
};

}  // namespace hcl
