// Hierarchical algorithms over CollArgs::topology (hosts, then fabrics, then
// the whole communicator), so the slow outer links carry as little as
// possible:
//  - AllReduce: reduce-scatter inside each group, allreduce of every shard
//    among the ranks holding the same shard in the other groups (recursively,
//    level by level), all-gather inside each group. With equal groups of g
//    ranks the outer links carry about 1/g of what a flat ring sends there.
//  - AllGather: across groups first (every rank its own block), then inside.
//  - ReduceScatter: inside groups first, then across.
//  - Broadcast / Reduce: pipelined chains through one representative per
//    group at each level, then inside the groups (reversed for Reduce).
// Groups may differ in size and need not be contiguous: every group shards
// the data by the smallest group size, and the members past it hand their
// data to those shard owners and get the result back from them. A null,
// empty or trivial topology gives the flat algorithm. The data is processed
// in segments (about one slice per member of the outermost ring, or one slice
// of every block), so scratch depends on the slice size and the group sizes,
// never on the message size.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule hierAllReduce(const CollArgs& args);
Schedule hierAllGather(const CollArgs& args);
Schedule hierReduceScatter(const CollArgs& args);
Schedule hierBroadcast(const CollArgs& args);
Schedule hierReduce(const CollArgs& args);

}  // namespace hcl
