// A Topology as text, for hclPlanInfo_t::groups: each level's group ids in
// rank order, innermost level first, levels separated by "; "
// ("0 0 1 1; 0 0 0 0"). Where that does not fit the caller's buffer, runs
// of one id are written as id*count ("0*8 1*8"), which still fits for many
// ranks grouped by host; where even that does not fit, nothing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "collectives/plan/topology.h"

namespace hcl {

// At most `capacity - 1` characters (the rest of the buffer is its NUL).
std::string topologyText(const Topology& topology, size_t capacity);
// Levels of `text` that give a group to each of `nranks` ranks; others are
// dropped.
Topology parseTopologyText(std::string_view text, int nranks);

}  // namespace hcl
