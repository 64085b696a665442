// reduceTwice: a result into two buffers, in one pass where a fused kernel
// of narrow_simd.h takes the type.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "collectives/reduce/narrow_simd.h"
#include "collectives/reduce/reduce.h"

namespace hcl {
namespace {

const uint8_t* bytes(const void* p) { return static_cast<const uint8_t*>(p); }
uint8_t* bytes(void* p) { return static_cast<uint8_t*>(p); }

// reduceTwice through the fused kernels of narrow_simd.h. Streamed stores
// need their destination aligned to a vector: the elements before that go
// the plain way, like the last ones. A destination that cannot be aligned
// (with the other) goes through the cache.
void reduceTwiceFused(void* dst, void* dst2, const void* a, const void* b, size_t count, const ReduceSpec& spec,
                      bool streamDst, bool streamDst2) {
  const size_t es = dataTypeSize(spec.type);
  const size_t vectorBytes = narrow_simd::lanes() * es;
  const auto misalignment = [&](const void* p) { return reinterpret_cast<uintptr_t>(p) % vectorBytes; };
  if (misalignment(dst) % es != 0) streamDst = false;
  if (misalignment(dst2) % es != 0) streamDst2 = false;
  const void* lead = streamDst ? dst : dst2;
  const size_t head =
      (streamDst || streamDst2) ? std::min(count, (vectorBytes - misalignment(lead)) % vectorBytes / es) : 0;
  if (streamDst && misalignment(bytes(dst) + es * head) != misalignment(bytes(dst2) + es * head)) streamDst2 = false;
  const auto plain = [&](size_t from, size_t n) {
    if (n == 0) return;
    const size_t at = from * es;
    reduce(bytes(dst) + at, Form::Native, bytes(a) + at, Form::Native, bytes(b) + at, Form::Native, n, spec);
    std::memcpy(bytes(dst2) + at, bytes(dst) + at, n * es);
  };
  plain(0, head);
  const size_t at = head * es;
  narrow_simd::Call call = narrow_simd::callFor(bytes(dst) + at, Form::Native, bytes(a) + at, Form::Native,
                                                bytes(b) + at, Form::Native, count - head, spec);
  call.dst2 = bytes(dst2) + at;
  call.streamDst = streamDst;
  call.streamDst2 = streamDst2;
  const size_t done = narrow_simd::reduceTwice(call);
  plain(head + done, count - head - done);
}

}  // namespace

void reduceTwice(void* dst, void* dst2, const void* a, const void* b, size_t count, const ReduceSpec& spec,
                 bool streamDst, bool streamDst2) {
  assert(spec.nranks >= 1);
  if (count == 0) return;
  if (reducesTwice(spec.type)) return reduceTwiceFused(dst, dst2, a, b, count, spec, streamDst, streamDst2);
  reduce(dst, Form::Native, a, Form::Native, b, Form::Native, count, spec);
  std::memcpy(dst2, dst, count * dataTypeSize(spec.type));
}

bool reducesTwice(hclDataType_t type) {
  // Not fp8: its blocks take long enough to compute that one pass into both
  // ran no faster than a reduce and a copy (docs/performance.md).
  return (type == hclFloat16 || type == hclBfloat16 || type == hclFloat32) && narrow_simd::lanes() > 0;
}

}  // namespace hcl
