// Recursive doubling: log2(n) exchanges of the whole vector. Latency-bound
// messages only. Ranks beyond the largest power of two fold into a partner
// first and get the result back at the end, so any rank count works.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule recursiveDoublingAllReduce(const CollArgs& args);

}  // namespace hcl
