// Binary-tree algorithms, pipelined in slices of CollArgs::chunkBytes.
//
// AllReduce runs on a double binary tree: two complementary trees, each
// carrying half of the data, in which every rank is interior in at most one
// tree (and a leaf in the other), so the work of interior ranks is shared.
// Each tree reduces up to its root and broadcasts back down. Broadcast and
// Reduce use a single binary tree rooted at CollArgs::root.
#pragma once

#include <array>

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

// One rank's neighbours in a tree: -1 for no parent (the root).
struct TreeLinks {
  int parent = -1;
  std::array<int, 2> children{-1, -1};
  int numChildren = 0;
};

// Tree 0 or 1 of the double binary tree over `nranks` ranks.
TreeLinks doubleTreeLinks(int tree, int rank, int nranks);
// The binary tree rooted at `root`.
TreeLinks rootedTreeLinks(int root, int rank, int nranks);

Schedule treeAllReduce(const CollArgs& args);
Schedule treeBroadcast(const CollArgs& args);
Schedule treeReduce(const CollArgs& args);

}  // namespace hcl
