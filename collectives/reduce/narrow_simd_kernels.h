// The fused fp16/bf16 kernel, written once over a vector type V that each
// ISA file defines (narrow_simd_avx512.cc, narrow_simd_avx2.cc). Include it
// only there, after the file's `#pragma GCC target`, so that the kernel is
// compiled for that ISA, and after every standard header, so that no inline
// library function is compiled for it: the linker could pick such a copy for
// the whole program. Everything here has internal linkage for the same reason.
//
// V provides: F (fp32 vector), kLanes, set1, loadAcc/storeAcc,
// loadHalf/storeHalf, loadBf16/storeBf16, add, mul, div, max, min. Its max
// and min follow reduce_ops.h: NaN-propagating, +0 above -0.
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

template <class V, Codec C, Form F>
void storeAt(void* base, size_t i, typename V::F v) {
  if constexpr (F == Form::Acc)
    V::storeAcc(static_cast<float*>(base) + i, v);
  else if constexpr (C == Codec::Half)
    V::storeHalf(static_cast<uint16_t*>(base) + i, v);
  else
    V::storeBf16(static_cast<uint16_t*>(base) + i, v);
}

template <class V, OpKind O>
typename V::F combine(typename V::F x, typename V::F y) {
  if constexpr (O == OpKind::Add) return V::add(x, y);
  if constexpr (O == OpKind::Mul) return V::mul(x, y);
  if constexpr (O == OpKind::Max) return V::max(x, y);
  if constexpr (O == OpKind::Min) return V::min(x, y);
  return x;
}

// One block is read completely before it is written, so a destination that
// aliases an operand of its own width, or a wider one, is safe.
template <class V, Codec C, OpKind O, Form DF, Form AF, Form BF>
size_t runBlocks(const Call& c) {
  const size_t n = c.count / V::kLanes * V::kLanes;
  const bool scale = c.kind == ReduceKind::PreMulSum;
  const bool divide = c.kind == ReduceKind::Avg;
  const typename V::F scalar = V::set1(c.scalar), nranks = V::set1(c.nranks);
  for (size_t i = 0; i < n; i += V::kLanes) {
    typename V::F r = loadAt<V, C, AF>(c.a, i);
    if (AF == Form::Native && scale) r = V::mul(r, scalar);
    if constexpr (O != OpKind::Copy) {
      typename V::F y = loadAt<V, C, BF>(c.b, i);
      if (BF == Form::Native && scale) y = V::mul(y, scalar);
      r = combine<V, O>(r, y);
    }
    if (DF == Form::Native && divide) r = V::div(r, nranks);
    storeAt<V, C, DF>(c.dst, i, r);
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

template <class V, OpKind O>
size_t runCodec(const Call& c) {
  switch (c.type) {
    case hclFloat16: return runOp<V, Codec::Half, O>(c);
    case hclBfloat16: return runOp<V, Codec::Bf16, O>(c);
    default: return 0;
  }
}

template <class V>
size_t reduceWith(const Call& c) {
  switch (c.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
    case ReduceKind::PreMulSum: return runCodec<V, OpKind::Add>(c);
    case ReduceKind::Prod: return runCodec<V, OpKind::Mul>(c);
    case ReduceKind::Max: return runCodec<V, OpKind::Max>(c);
    case ReduceKind::Min: return runCodec<V, OpKind::Min>(c);
  }
  return 0;
}

template <class V>
size_t convertWith(const Call& c) {
  return runCodec<V, OpKind::Copy>(c);
}

}  // namespace
}  // namespace hcl::narrow_simd
