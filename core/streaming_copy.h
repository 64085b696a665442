// Copies and sums whose stores bypass the cache: for writing a large result
// into a peer's mapped buffer, which this rank never reads again. Saves the
// read for ownership a normal store pays per cache line, and keeps the cache
// for the inputs; results that would still be in cache at the next call are
// stored through it.
#pragma once

#include <cstddef>

#include "core/cpu_family.h"

namespace hcl {

// memcpy for non-overlapping buffers; ends with a store fence, so a release
// store after it (publishing a message) orders after the data.
void streamingCopy(void* dst, const void* src, size_t bytes);

// Which results of a fused sum bypass the cache.
enum class SumStores { Cached, PeerStreamed, BothStreamed };

// What pays for a call of `callBytes` on `nranks` ranks on a CPU of
// `family`: streaming saves the read for ownership and keeps the cache for
// the inputs, but where the results would still be in cache at the next call
// it costs. Where that turns depends on the caches, measured per family.
SumStores sumStoresFor(size_t callBytes, int nranks, CpuFamily family);

// own[i] = peer[i] = a[i] + b[i] over float32, stored as `stores` says (ends
// with a store fence where anything streamed): a 2-rank allreduce's result
// goes to both ranks' buffers with one read of each input. own may be b.
void sumToOwnAndPeer(float* own, float* peer, const float* a, const float* b, size_t count, SumStores stores);

// cached[i] = streamed[i] = a[i] + b[i] over float32, `streamed` stored past
// the cache (ends with a store fence): the result goes where a peer reads it
// next (cached) and into this rank's own output. Either may be b.
void sumToCachedAndStreamed(float* cached, float* streamed, const float* a, const float* b, size_t count);

}  // namespace hcl
