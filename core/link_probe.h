// HCL_PROBE=1: measures the latency and bandwidth of each link class at init
// on one pair of ranks per class, so the cost model prices real links.
#pragma once

#include <memory>
#include <vector>

#include "collectives/plan/link_model.h"
#include "core/bootstrap.h"
#include "core/communicator.h"

namespace hcl {

// Collective over the communicator and `oob`. Every rank receives every
// measured class (as rules that override the model's costs).
Status probeLinks(Oob& oob, const std::shared_ptr<Communicator>& comm, std::vector<LinkModelRule>& measured);

}  // namespace hcl
