// Flat all-reduce: every rank sends its whole vector to every other rank and
// reduces all of them itself, in rank order (so every rank computes the same
// bits). One round of messages instead of recursive doubling's log2(n): for
// tiny messages on few ranks, where waiting for a peer to be scheduled costs
// more than the extra bytes.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule flatAllReduce(const CollArgs& args);

}  // namespace hcl
