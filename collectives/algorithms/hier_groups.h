// Rank groups for the hierarchical algorithms: which topology levels apply,
// how a list of ranks splits at one level, and the broadcast/reduce tree.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/plan/collective.h"

namespace hcl::hier {

// The group id of every rank at one level.
using Level = std::vector<int>;

// The topology's levels, innermost first. A level that does not give every
// rank of the communicator a group is ignored, so a malformed topology
// degrades to fewer levels instead of a wrong schedule.
std::vector<Level> usableLevels(const CollArgs& args);

// A list of ranks split by one level. Groups are ordered by their first
// member in the list and keep the list's order inside. In every group the
// first `owners` members (owners = the smallest group size) each hold one
// shard of the data; the remaining members ("extras") hand their data to the
// owners and get the result back from them, which is how groups of unequal
// size share one sharding.
struct Split {
  std::vector<std::vector<size_t>> groups;  // positions in the list
  size_t owners = 0;
  size_t myGroup = 0, myIndex = 0;  // where the calling rank is

  // One group, or only single-rank groups: the level adds nothing.
  bool trivial() const;
  bool isOwner() const { return myIndex < owners; }
  const std::vector<size_t>& mine() const { return groups[myGroup]; }
  // The j-th member of every group: the ranks that combine shard j.
  std::vector<size_t> column(size_t j) const;
  // The owner (index in its group) an extra at `index` hands its blocks to.
  size_t partnerOf(size_t index) const { return index % owners; }
};

Split splitAt(const std::vector<int>& ranks, const Level& groupOf, int me);

// The first level from `from` on that splits `ranks` into something useful,
// with its split in `split`; levels.size() when there is none.
size_t nextSplittingLevel(const std::vector<Level>& levels, size_t from, const std::vector<int>& ranks,
                          int me, Split& split);

std::vector<int> ranksAt(const std::vector<int>& ranks, const std::vector<size_t>& positions);

// The calling rank's place in the broadcast tree (reversed, the reduce tree):
// the root reaches one representative per outermost group along a chain, each
// representative reaches one per group of the next level inside its own,
// and so on down to a chain through every host. Outer children come first.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};

TreeLinks broadcastTree(const std::vector<Level>& levels, int nranks, int root, int me);

}  // namespace hcl::hier
