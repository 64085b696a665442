// The cost model's time for one recorded operation, for hclGroupSimulateEnd.
#pragma once

#include "core/group.h"

namespace hcl {

// Microseconds: the plan table's estimate for the call's size bucket (scaled
// by size above the last bucket), or for a send or receive the link model's
// latency plus transfer time to the peer. 0 where the communicator has no
// plan table (one rank) or the peer is the rank itself.
double estimatedUs(const PendingOp& op);

}  // namespace hcl
