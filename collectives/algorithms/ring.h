// Ring algorithms, pipelined in slices of CollArgs::chunkBytes.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule ringAllReduce(const CollArgs& args);
Schedule ringReduceScatter(const CollArgs& args);
Schedule ringAllGather(const CollArgs& args);
Schedule ringBroadcast(const CollArgs& args);
Schedule ringReduce(const CollArgs& args);

}  // namespace hcl
