// Picks the algorithm for a collective and expands it into a schedule.
#pragma once

#include <span>
#include <cstdint>
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
  size_t maxBytes;  // used only up to this message size (0: any size)
};

// Every registered algorithm (collectives/algorithms/registry.cc).
std::span<const AlgorithmEntry> algorithmTable();

// The choice for this communicator: the first allowed entry of the table
// whose size limit admits the message. `overrideSpec` uses NCCL_ALGO's grammar:
// "ring" or "allreduce:ring;broadcast:ring"; "^name" excludes. Algorithms not
// registered for a collective are ignored.
class Planner {
 public:
  explicit Planner(std::string_view overrideSpec = {});
  Schedule plan(const CollArgs& args) const;
  // The algorithm used for `bytes` bytes (the nccl-tests "size").
  const char* algorithmFor(CollKind kind, size_t bytes = SIZE_MAX) const;

 private:
  std::vector<const AlgorithmEntry*> allowed(CollKind kind) const;
  const AlgorithmEntry* choose(const CollArgs& args) const;
  std::string spec_;
  // Decided once per communicator, so a bad override warns once.
  std::vector<std::vector<const AlgorithmEntry*>> allowed_;
};

}  // namespace hcl
