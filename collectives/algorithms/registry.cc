// Every algorithm, one line each. The first entry for a collective is its default.
#include "collectives/algorithms/hierarchical.h"
#include "collectives/algorithms/pairwise.h"
#include "collectives/algorithms/recursive_doubling.h"
#include "collectives/algorithms/rhd.h"
#include "collectives/algorithms/ring.h"
#include "collectives/algorithms/tree.h"
#include "collectives/plan/plan.h"

namespace hcl {

std::span<const AlgorithmEntry> algorithmTable() {
  static const AlgorithmEntry table[] = {
      {CollKind::AllReduce, "rd", recursiveDoublingAllReduce, 16 * 1024},
      {CollKind::AllReduce, "ring", ringAllReduce, 0},
      {CollKind::AllReduce, "tree", treeAllReduce, 0},
      {CollKind::AllReduce, "rhd", rhdAllReduce, 0},
      {CollKind::AllReduce, "hier", hierAllReduce, 0},
      {CollKind::ReduceScatter, "ring", ringReduceScatter, 0},
      {CollKind::ReduceScatter, "rhd", rhdReduceScatter, 0},
      {CollKind::ReduceScatter, "hier", hierReduceScatter, 0},
      {CollKind::AllGather, "ring", ringAllGather, 0},
      {CollKind::AllGather, "rhd", rhdAllGather, 0},
      {CollKind::AllGather, "hier", hierAllGather, 0},
      {CollKind::Broadcast, "ring", ringBroadcast, 0},
      {CollKind::Broadcast, "tree", treeBroadcast, 0},
      {CollKind::Broadcast, "hier", hierBroadcast, 0},
      {CollKind::Reduce, "ring", ringReduce, 0},
      {CollKind::Reduce, "tree", treeReduce, 0},
      {CollKind::Reduce, "hier", hierReduce, 0},
      {CollKind::AlltoAll, "pairwise", pairwiseAlltoAll, 0},
      {CollKind::Gather, "direct", directGather, 0},
      {CollKind::Scatter, "direct", directScatter, 0},
  };
  return table;
}

}  // namespace hcl
