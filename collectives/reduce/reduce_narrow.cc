// Reduction for fp16, bf16 and fp8, which accumulate in fp32. The fused vector
// kernels of narrow_simd.h take what they can (everything but a vector's
// tail and in-place widening, on CPUs with AVX2 and F16C); the rest goes
// chunk by chunk through small fp32 buffers: Native operands are widened
// (and scaled for PreMulSum) into a buffer, Acc operands are read in place,
// the combine loop runs on fp32 only, and a Native destination is rounded
// once at the end.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "collectives/reduce/float_arrays.h"
#include "collectives/reduce/isa_clones.h"
#include "collectives/reduce/narrow_simd.h"
#include "collectives/reduce/reduce_kernels.h"
#include "collectives/reduce/reduce_ops.h"

namespace hcl::reduce_kernels {
namespace {

constexpr size_t kChunk = 512;

struct NarrowParams {
  hclDataType_t type;
  size_t nativeSize;
  bool scaleNative;    // PreMulSum: Native operands are multiplied on load
  bool divideOnStore;  // Avg: a Native destination is divided by nranks
  float scalar;
  float nranks;
};

NarrowParams makeParams(const ReduceSpec& spec) {
  return {spec.type,
          dataTypeSize(spec.type),
          spec.kind == ReduceKind::PreMulSum,
          spec.kind == ReduceKind::Avg,
          narrow_simd::scalarOf(spec),
          narrow_simd::divisorOf(spec)};
}

HCL_ISA_CLONES void multiplyBy(float* __restrict x, size_t n, float s) {
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

HCL_ISA_CLONES void divideBy(float* __restrict x, size_t n, float d) {
  for (size_t i = 0; i < n; ++i) x[i] /= d;
}

const uint8_t* bytes(const void* p) { return static_cast<const uint8_t*>(p); }
uint8_t* bytes(void* p) { return static_cast<uint8_t*>(p); }

// Elements [off, off+len) of an operand as fp32 in accumulator form.
const float* loadChunk(const void* src, Form form, size_t off, size_t len, float* buf,
                       const NarrowParams& p) {
  if (form == Form::Acc) return static_cast<const float*>(src) + off;
  widenToFloat(p.type, bytes(src) + off * p.nativeSize, buf, len);
  if (p.scaleNative) multiplyBy(buf, len, p.scalar);
  return buf;
}

// res is a private buffer; it may be modified.
void storeChunk(void* dst, Form form, size_t off, size_t len, float* res, const NarrowParams& p) {
  if (form == Form::Acc) {
    std::memcpy(static_cast<float*>(dst) + off, res, len * sizeof(float));
    return;
  }
  if (p.divideOnStore) divideBy(res, len, p.nranks);
  narrowFromFloat(p.type, res, bytes(dst) + off * p.nativeSize, len);
}

template <class Op>
HCL_ISA_CLONES void combine(float* __restrict out, const float* __restrict x, const float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Op::apply(x[i], y[i]);
}

// A destination that exactly aliases a narrower operand (in-place widening)
// must be walked from the end, so that no chunk overwrites unread input.
bool walkBackwards(const void* dst, Form dstForm, const void* src, Form srcForm) {
  return dst == src && dstForm == Form::Acc && srcForm == Form::Native;
}

template <class ChunkFn>
void forEachChunk(size_t count, bool backwards, ChunkFn&& fn) {
  const size_t chunks = (count + kChunk - 1) / kChunk;
  for (size_t k = 0; k < chunks; ++k) {
    const size_t idx = backwards ? chunks - 1 - k : k;
    const size_t off = idx * kChunk;
    fn(off, std::min(kChunk, count - off));
  }
}

template <class Op>
void reduceChunks(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
                  size_t count, bool backwards, const NarrowParams& p) {
  float bufA[kChunk], bufB[kChunk], res[kChunk];
  forEachChunk(count, backwards, [&](size_t off, size_t len) {
    const float* x = loadChunk(a, aForm, off, len, bufA, p);
    const float* y = (b == a && bForm == aForm) ? x : loadChunk(b, bForm, off, len, bufB, p);
    combine<Op>(res, x, y, len);
    storeChunk(dst, dstForm, off, len, res, p);
  });
}

size_t byteOffset(Form form, size_t elements, const NarrowParams& p) {
  return elements * (form == Form::Acc ? sizeof(float) : p.nativeSize);
}

}  // namespace

void reduceNarrow(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
                  size_t count, const ReduceSpec& spec) {
  using namespace reduce_ops;
  const NarrowParams p = makeParams(spec);
  const bool backwards =
      walkBackwards(dst, dstForm, a, aForm) || walkBackwards(dst, dstForm, b, bForm);
  const size_t done =
      backwards ? 0 : narrow_simd::reduce(narrow_simd::callFor(dst, dstForm, a, aForm, b, bForm, count, spec));
  if (done == count) return;
  dst = bytes(dst) + byteOffset(dstForm, done, p);
  a = bytes(a) + byteOffset(aForm, done, p);
  b = bytes(b) + byteOffset(bForm, done, p);
  count -= done;
  switch (spec.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
    case ReduceKind::PreMulSum: reduceChunks<Add>(dst, dstForm, a, aForm, b, bForm, count, backwards, p); return;
    case ReduceKind::Prod: reduceChunks<Mul>(dst, dstForm, a, aForm, b, bForm, count, backwards, p); return;
    case ReduceKind::Max: reduceChunks<Max>(dst, dstForm, a, aForm, b, bForm, count, backwards, p); return;
    case ReduceKind::Min: reduceChunks<Min>(dst, dstForm, a, aForm, b, bForm, count, backwards, p); return;
  }
}

void convertNarrow(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                   const ReduceSpec& spec) {
  if (dstForm == Form::Acc && srcForm == Form::Acc) {
    if (dst != src) std::memcpy(dst, src, count * sizeof(float));
    return;
  }
  const NarrowParams p = makeParams(spec);
  const bool backwards = walkBackwards(dst, dstForm, src, srcForm);
  const size_t done = backwards ? 0
                                : narrow_simd::convert(
                                      narrow_simd::callFor(dst, dstForm, src, srcForm, nullptr, srcForm, count, spec));
  if (done == count) return;
  dst = bytes(dst) + byteOffset(dstForm, done, p);
  src = bytes(src) + byteOffset(srcForm, done, p);
  count -= done;
  float res[kChunk];
  forEachChunk(count, backwards, [&](size_t off, size_t len) {
    const float* x = loadChunk(src, srcForm, off, len, res, p);
    if (x != res) std::memcpy(res, x, len * sizeof(float));
    storeChunk(dst, dstForm, off, len, res, p);
  });
}

}  // namespace hcl::reduce_kernels
