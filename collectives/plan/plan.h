// Picks the algorithm for a collective and expands it into a schedule.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

using ScheduleGenerator = Schedule (*)(const CollArgs&);

struct AlgorithmEntry {
  CollKind kind;
  const char* name;
  ScheduleGenerator generate;
};

// Every registered algorithm (collectives/algorithms/registry.cc).
std::span<const AlgorithmEntry> algorithmTable();

// The choice for this communicator. `overrideSpec` uses NCCL_ALGO's grammar:
// "ring" or "allreduce:ring;broadcast:ring"; "^name" excludes. Algorithms not
// registered for a collective are ignored.
class Planner {
 public:
  explicit Planner(std::string_view overrideSpec = {});
  Schedule plan(const CollArgs& args) const;
  const char* algorithmFor(CollKind kind) const;

 private:
  const AlgorithmEntry* choose(CollKind kind) const;
  std::string spec_;
  // Decided once per communicator, so a bad override warns once.
  std::vector<const AlgorithmEntry*> chosen_;
};

}  // namespace hcl
