// Recursive halving and doubling: log2(n) exchanges whose sizes halve
// (reduce-scatter) or double (all-gather). AllReduce is Rabenseifner's
// algorithm: reduce-scatter by recursive halving, then all-gather by recursive
// doubling.
//
// Any rank count works: with p the largest power of two <= n, the first
// 2(n - p) ranks pair up (2i, 2i + 1); the odd rank of each pair folds its
// data into the even one, which stands for both in the power-of-two exchanges
// and hands the odd rank its result at the end. Paired ranks are adjacent, so
// every participant owns a contiguous range of the NCCL-defined blocks.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule rhdAllReduce(const CollArgs& args);
Schedule rhdReduceScatter(const CollArgs& args);
Schedule rhdAllGather(const CollArgs& args);

}  // namespace hcl
