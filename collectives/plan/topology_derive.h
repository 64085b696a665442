// Finds the groups of hierarchical algorithms in a link graph.
#pragma once

#include "collectives/plan/link_model.h"
#include "collectives/plan/topology.h"

namespace hcl {

// Level "host": ranks joined by intra-host links. Level "fabric": ranks joined
// by links faster than the slowest class in the graph (and by host links).
// A level is kept only when it has a group of two or more ranks and differs
// from the level below and from the whole communicator.
Topology deriveTopology(const LinkGraph& graph);

}  // namespace hcl
