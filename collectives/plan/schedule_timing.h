// Prices a collective by replaying every rank's schedule on the link graph:
// a transfer starts when both ends have posted it and both NICs are free,
// takes alpha + bytes / beta of its link class, and local reductions and
// copies run at the graph's reduction rate. The result is the time the
// slowest rank finishes.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/plan/link_model.h"
#include "collectives/plan/schedule.h"

namespace hcl {

struct ScheduleEstimate {
  bool valid = false;  // false when the schedules deadlock or do not match
  double us = 0;
  std::vector<bool> classesUsed;  // per class of the graph: carried data
};

ScheduleEstimate estimateSchedules(const std::vector<Schedule>& schedules, const LinkGraph& graph);

}  // namespace hcl
