// Copies and sums whose stores bypass the cache: for writing a large result
// into a peer's mapped buffer, which this rank never reads again. Saves the
// read for ownership a normal store pays per cache line, and keeps the cache
// for the inputs; results that would still be in cache at the next call are
// stored through it.
#pragma once

#include <cstddef>

#include "core/store_policy.h"

namespace hcl {

// memcpy for non-overlapping buffers, past the cache from 64 KiB (smaller
// copies stay in the cache, where the next reader wants them). Where it
// stores past the cache it ends with a store fence, so a release store
// after it (publishing a message) orders after the data.
void streamingCopy(void* dst, const void* src, size_t bytes);

// The same, past the cache at every size: for a caller that chose that for
// this copy (a message slot whose receiver runs on a CPU apart).
void nonTemporalCopy(void* dst, const void* src, size_t bytes);

// own[i] = peer[i] = a[i] + b[i] over float32, stored as `stores` says (ends
// with a store fence where anything streamed): a 2-rank allreduce's result
// goes to both ranks' buffers with one read of each input. own may be b.
void sumToOwnAndPeer(float* own, float* peer, const float* a, const float* b, size_t count, SumStores stores);

// kept[i] = out[i] = a[i] + b[i] over float32, `kept` through the cache
// (a peer reads it next) and `out` past it where `streamOut` says so (then
// ending with a store fence): the window all-reduce's result goes into its
// scratch and this rank's output at once. Either may be b.
void sumToKeptAndOut(float* kept, float* out, const float* a, const float* b, size_t count, bool streamOut);

}  // namespace hcl
