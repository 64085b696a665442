// Building blocks of the algorithms that reach peers' buffers directly
// (direct_access.cc, window.cc): shards, the address exchange that opens a
// run and the messages that close it, and the reduction of one slice
// across every rank.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl::direct {

constexpr size_t kAlign = 64;

inline size_t roundUp(size_t v, size_t to) { return (v + to - 1) / to * to; }

struct Shard {
  size_t begin = 0, len = 0;  // elements
};

// Rank r's share of `total` elements, the first `total % n` ranks one larger.
Shard shardOf(size_t total, int n, int r);

// Every other rank, starting after r: at any moment ranks tend to read from
// different peers instead of all from the same one.
std::vector<int> peersAfter(int r, int n);

// Swaps buffer addresses with every peer and waits for all of theirs.
void openPeers(ScheduleBuilder& b, int self, const std::vector<int>& peers);

// An empty message to every rank in `notify` ("I am past this point"), and
// the receives of the same message from every rank in `await`, returned for
// the caller to wait on. At the end of a run it says "I no longer touch your
// buffers"; the run ends only when every awaited rank has said it too.
std::vector<uint32_t> signalPeers(ScheduleBuilder& b, const std::vector<int>& notify, const std::vector<int>& await);

// The windows that a rank's peers map (window.cc, window_copy.cc) stay
// well below what a communicator keeps of its scratch between calls, so
// peers map them once.
constexpr size_t kMaxWindowBytes = 8u << 20;

// How many scratch regions calls with windows of `windowBytes` take in
// turn (Schedule::scratchTurns). A store into a line that another core
// still caches waits for that copy's invalidation: on AMD EPYC (Zen 4)
// copying 512 KiB into a shared buffer the other core read just before
// took 52 us, into one it read four such buffers earlier 14 us. Small
// windows therefore rotate, up to 4 MiB together, where the peers' reads of
// the calls in between have pushed the lines out of their caches; larger
// ones already touch enough between two uses.
constexpr size_t kRotateWithin = 4u << 20;
size_t windowTurns(size_t windowBytes, size_t rotateWithin = kRotateWithin);

// Whether a rank's own block of an all-gather or all-to-all that pulls the
// peers' blocks is stored past the cache: where the outputs of all ranks (on
// one host) leave it anyway (2 ranks, 64 MiB: all-gather 3.3 -> 4.1 GB/s,
// all-to-all 3.0 -> 3.7; 4 ranks on 2 cores, 16 MiB: 0.95-1.0x -> 1.04-1.17x
// Open MPI).
bool ownBlockPastCache(size_t blockBytes, int nranks);

// Elements per slice: chunkBytes of the wider of the type and its accumulator.
size_t sliceElements(const CollArgs& a);
// The same for the direct algorithms' shard reductions: at most 128 KiB.
size_t shardSliceElements(const CollArgs& a);

// dst (Native) = `own` (op) the `m` elements at peerSource(p) of every peer
// p: one peer's slice at a time is folded into `acc` (Acc form; read into
// `tmp` first where the peer's memory is not mapped), so the working set
// stays a few slices. With `dstApart` (dst overlaps neither `own` nor
// `acc`), the last peer's slice is read into dst itself and folded there.
void reduceAcrossPeers(ScheduleBuilder& b, const std::vector<int>& peers, BufferRef own,
                       const std::function<BufferRef(int)>& peerSource, size_t elemBytes, size_t m, BufferRef dst,
                       bool dstApart, BufferRef tmp, BufferRef acc);

}  // namespace hcl::direct
