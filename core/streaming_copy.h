// A copy whose stores bypass the cache: for writing a large result into a
// peer's mapped buffer, which this rank never reads again. Saves the read
// for ownership a normal store pays per cache line.
#pragma once

#include <cstddef>

namespace hcl {

// memcpy for non-overlapping buffers; ends with a store fence, so a release
// store after it (publishing a message) orders after the data.
void streamingCopy(void* dst, const void* src, size_t bytes);

// dst1[i] = dst2[i] = a[i] + b[i] over float32, both stored past the cache
// (ends with a store fence): a 2-rank allreduce's result goes to both
// ranks' buffers with one read of each input and no read for ownership.
void streamingSumToBoth(float* dst1, float* dst2, const float* a, const float* b, size_t count);

// cached[i] = streamed[i] = a[i] + b[i] over float32, `streamed` stored past
// the cache (ends with a store fence): the result goes where a peer reads it
// next (cached) and into this rank's own output. streamed may be b.
void sumToCachedAndStreamed(float* cached, float* streamed, const float* a, const float* b, size_t count);

}  // namespace hcl
