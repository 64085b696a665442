#include "core/op_estimate.h"

#include "core/communicator.h"
#include "core/datatype.h"

namespace hcl {

double estimatedUs(const PendingOp& op) {
  const PlanTable* table = op.comm->planner().table();
  if (!table) return 0;
  const size_t bytes = op.count * dataTypeSize(op.type);
  if (op.kind == CollKind::SendRecv) {
    const int self = op.comm->rank();
    if (op.root == self || table->graph.nranks <= op.root) return 0;
    const LinkCost& link = table->graph.costBetween(self, op.root);
    return link.alphaUs + (link.bytesPerUs > 0 ? static_cast<double>(bytes) / link.bytesPerUs : 0);
  }
  const PlanChoice* choice = table->find(op.kind, bytes);
  if (!choice) return 0;
  const size_t lastBucketBytes = PlanTable::bucketBytes(PlanTable::kBuckets - 1);
  const double scale = bytes > lastBucketBytes ? static_cast<double>(bytes) / static_cast<double>(lastBucketBytes) : 1;
  return choice->estimatedUs * scale;
}

}  // namespace hcl
