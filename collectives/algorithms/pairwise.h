// Pairwise exchanges: every transfer is posted at once and completes in any
// order, so no pattern can deadlock.
#pragma once

#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule pairwiseAlltoAll(const CollArgs& args);
Schedule directGather(const CollArgs& args);
Schedule directScatter(const CollArgs& args);

}  // namespace hcl
