// Every algorithm, one line each. The first entry for a collective is its default.
#include "collectives/algorithms/pairwise.h"
#include "collectives/algorithms/ring.h"
#include "collectives/plan/plan.h"

namespace hcl {

std::span<const AlgorithmEntry> algorithmTable() {
  static const AlgorithmEntry table[] = {
      {CollKind::AllReduce, "ring", ringAllReduce},
      {CollKind::ReduceScatter, "ring", ringReduceScatter},
      {CollKind::AllGather, "ring", ringAllGather},
      {CollKind::Broadcast, "ring", ringBroadcast},
      {CollKind::Reduce, "ring", ringReduce},
      {CollKind::AlltoAll, "pairwise", pairwiseAlltoAll},
      {CollKind::Gather, "direct", directGather},
      {CollKind::Scatter, "direct", directScatter},
  };
  return table;
}

}  // namespace hcl
