// How a collective's buffers split into chunks for the host-staged path.
//
// Each buffer is a row-major matrix of `blocks` rows of `count` elements (a
// rank's block in allgather, reducescatter, alltoall, gather and scatter;
// one row otherwise). Chunk k is the same column range of every row, so a
// chunk is itself the same collective on `width` elements and moves with one
// 2-D copy. Every rank derives the same chunks from the call's arguments.
#pragma once

#include <algorithm>
#include <cstddef>

#include "collectives/plan/collective.h"

namespace hcl {

struct StageLayout {
  size_t inBlocks = 1;
  size_t outBlocks = 1;
  bool readsInput = true;    // this rank's send buffer holds data the call uses
  bool writesOutput = true;  // this rank's recv buffer receives a result
};

inline StageLayout stageLayout(CollKind kind, int rank, int nranks, int root) {
  const size_t n = static_cast<size_t>(nranks);
  const bool isRoot = rank == root;
  switch (kind) {
    case CollKind::AllGather: return {1, n, true, true};
    case CollKind::ReduceScatter: return {n, 1, true, true};
    case CollKind::AlltoAll: return {n, n, true, true};
    case CollKind::Gather: return {1, n, true, isRoot};
    case CollKind::Scatter: return {n, 1, isRoot, true};
    case CollKind::Broadcast: return {1, 1, isRoot, true};
    case CollKind::Reduce: return {1, 1, true, isRoot};
    default: return {1, 1, true, true};
  }
}

// Elements per row in one chunk: a chunk of every row fits `slotBytes`.
inline size_t stageChunkWidth(const StageLayout& l, size_t elemSize, size_t slotBytes) {
  const size_t rows = std::max(l.inBlocks, l.outBlocks);
  return std::max<size_t>(1, slotBytes / (elemSize * rows));
}

inline size_t stageChunkCount(size_t count, size_t width) { return (count + width - 1) / width; }

}  // namespace hcl
