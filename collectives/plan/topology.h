// How a communicator's ranks group by link speed, for hierarchical
// algorithms: innermost level first (ranks on one host, then ranks on one
// fabric). The whole communicator is the implicit outermost level.
#pragma once

#include <vector>

namespace hcl {

struct Topology {
  // levels[l][r] is the group of rank r at level l. Group ids run from 0 to
  // (number of groups - 1), numbered in order of their lowest rank, and every
  // group of level l lies inside one group of level l + 1.
  std::vector<std::vector<int>> levels;

  bool flat() const { return levels.empty(); }
};

}  // namespace hcl
