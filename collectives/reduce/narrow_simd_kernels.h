// The fused fp16/bf16 kernel, written once over a vector type V that each
// ISA file defines (narrow_simd_avx512.cc, narrow_simd_avx2.cc). Include it
// only there, after the file's `#pragma GCC target`, so that the kernel is
// compiled for that ISA, and after every standard header, so that no inline
// library function is compiled for it: the linker could pick such a copy for
// the whole program. Everything here has internal linkage for the same reason.
//
// V provides: F (fp32 vector), H (the same lanes as 16-bit codes), kLanes,
// set1, loadAcc/storeAcc, loadHalf/packHalf, loadBf16/packBf16, store and
// stream (of an H, the latter past the cache), add, mul, div, max, min. Its
// max and min follow reduce_ops.h: NaN-propagating, +0 above -0.
#pragma once

// Needs <cstddef>, <cstdint>, <utility> and narrow_simd.h, included first.

namespace hcl::narrow_simd {
namespace {

enum class Codec { Half, Bf16 };
enum class OpKind { Add, Mul, Max, Min, Copy };

template <class V, Codec C, Form F>
typename V::F loadAt(const void* base, size_t i) {
  if constexpr (F == Form::Acc)
    return V::loadAcc(static_cast<const float*>(base) + i);
  else if constexpr (C == Codec::Half)
    return V::loadHalf(static_cast<const uint16_t*>(base) + i);
  else
    return V::loadBf16(static_cast<const uint16_t*>(base) + i);
}

template <class V, Codec C>
typename V::H pack(typename V::F v) {
  if constexpr (C == Codec::Half)
    return V::packHalf(v);
  else
    return V::packBf16(v);
}

template <class V, bool Stream>
void put(void* base, size_t i, typename V::H h) {
  if constexpr (Stream)
    V::stream(static_cast<uint16_t*>(base) + i, h);
  else
    V::store(static_cast<uint16_t*>(base) + i, h);
}

template <class V, Codec C, Form F>
void storeAt(void* base, size_t i, typename V::F v) {
  if constexpr (F == Form::Acc)
    V::storeAcc(static_cast<float*>(base) + i, v);
  else
    put<V, false>(base, i, pack<V, C>(v));
}

template <class V, OpKind O>
typename V::F combine(typename V::F x, typename V::F y) {
  if constexpr (O == OpKind::Add) return V::add(x, y);
  if constexpr (O == OpKind::Mul) return V::mul(x, y);
  if constexpr (O == OpKind::Max) return V::max(x, y);
  if constexpr (O == OpKind::Min) return V::min(x, y);
  return x;
}

// What every block of a call shares: PreMulSum's scalar, Avg's divisor.
template <class V>
struct BlockConstants {
  explicit BlockConstants(const Call& c)
      : scale(c.kind == ReduceKind::PreMulSum),
        divide(c.kind == ReduceKind::Avg),
        scalar(V::set1(c.scalar)),
        nranks(V::set1(c.nranks)) {}
  bool scale, divide;
  typename V::F scalar, nranks;
};

// Block i's result in fp32: the operands loaded (Native ones scaled under
// PreMulSum), combined, and divided where Avg stores into a Native dst.
template <class V, Codec C, OpKind O, Form DF, Form AF, Form BF>
typename V::F blockResult(const Call& c, size_t i, const BlockConstants<V>& k) {
  typename V::F r = loadAt<V, C, AF>(c.a, i);
  if (AF == Form::Native && k.scale) r = V::mul(r, k.scalar);
  if constexpr (O != OpKind::Copy) {
    typename V::F y = loadAt<V, C, BF>(c.b, i);
    if (BF == Form::Native && k.scale) y = V::mul(y, k.scalar);
    r = combine<V, O>(r, y);
  }
  if (DF == Form::Native && k.divide) r = V::div(r, k.nranks);
  return r;
}

// One block is read completely before it is written, so a destination that
// aliases an operand of its own width, or a wider one, is safe.
template <class V, Codec C, OpKind O, Form DF, Form AF, Form BF>
size_t runBlocks(const Call& c) {
  const size_t n = c.count / V::kLanes * V::kLanes;
  const BlockConstants<V> k(c);
  for (size_t i = 0; i < n; i += V::kLanes) storeAt<V, C, DF>(c.dst, i, blockResult<V, C, O, DF, AF, BF>(c, i, k));
  return n;
}

// runBlocks over Native operands, into two Native destinations at once.
template <class V, Codec C, OpKind O, bool Stream1, bool Stream2>
size_t runBlocksTwice(const Call& c) {
  constexpr Form N = Form::Native;
  const size_t n = c.count / V::kLanes * V::kLanes;
  const BlockConstants<V> k(c);
  for (size_t i = 0; i < n; i += V::kLanes) {
    const typename V::H h = pack<V, C>(blockResult<V, C, O, N, N, N>(c, i, k));
    put<V, Stream1>(c.dst, i, h);
    put<V, Stream2>(c.dst2, i, h);
  }
  return n;
}

constexpr Form formBit(size_t index, int bit) { return ((index >> bit) & 1u) ? Form::Acc : Form::Native; }

template <class V, Codec C, OpKind O, size_t... K>
size_t byForms(const Call& c, std::index_sequence<K...>) {
  using Kernel = size_t (*)(const Call&);
  static constexpr Kernel kKernels[] = {&runBlocks<V, C, O, formBit(K, 2), formBit(K, 1), formBit(K, 0)>...};
  const size_t index = (c.dstForm == Form::Acc ? 4u : 0u) | (c.aForm == Form::Acc ? 2u : 0u) |
                       (O != OpKind::Copy && c.bForm == Form::Acc ? 1u : 0u);
  return kKernels[index](c);
}

template <class V, Codec C, OpKind O>
size_t runOp(const Call& c) {
  return byForms<V, C, O>(c, std::make_index_sequence<8>{});
}

template <class V, Codec C, OpKind O>
size_t runTwice(const Call& c) {
  if (c.streamDst && c.streamDst2) return runBlocksTwice<V, C, O, true, true>(c);
  if (c.streamDst) return runBlocksTwice<V, C, O, true, false>(c);
  if (c.streamDst2) return runBlocksTwice<V, C, O, false, true>(c);
  return runBlocksTwice<V, C, O, false, false>(c);
}

template <class V, OpKind O, bool Twice>
size_t runCodec(const Call& c) {
  switch (c.type) {
    case hclFloat16: return Twice ? runTwice<V, Codec::Half, O>(c) : runOp<V, Codec::Half, O>(c);
    case hclBfloat16: return Twice ? runTwice<V, Codec::Bf16, O>(c) : runOp<V, Codec::Bf16, O>(c);
    default: return 0;
  }
}

template <class V, bool Twice = false>
size_t reduceWith(const Call& c) {
  switch (c.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
    case ReduceKind::PreMulSum: return runCodec<V, OpKind::Add, Twice>(c);
    case ReduceKind::Prod: return runCodec<V, OpKind::Mul, Twice>(c);
    case ReduceKind::Max: return runCodec<V, OpKind::Max, Twice>(c);
    case ReduceKind::Min: return runCodec<V, OpKind::Min, Twice>(c);
  }
  return 0;
}

template <class V>
size_t convertWith(const Call& c) {
  return runCodec<V, OpKind::Copy, false>(c);
}

template <class V>
size_t reduceTwiceWith(const Call& c) {
  const size_t n = reduceWith<V, true>(c);
  if (c.streamDst || c.streamDst2) V::storeFence();
  return n;
}

}  // namespace
}  // namespace hcl::narrow_simd
