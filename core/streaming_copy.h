// A copy whose stores bypass the cache: for writing a large result into a
// peer's mapped buffer, which this rank never reads again. Saves the read
// for ownership a normal store pays per cache line.
#pragma once

#include <cstddef>

namespace hcl {

// memcpy for non-overlapping buffers; ends with a store fence, so a release
// store after it (publishing a message) orders after the data.
void streamingCopy(void* dst, const void* src, size_t bytes);

}  // namespace hcl
