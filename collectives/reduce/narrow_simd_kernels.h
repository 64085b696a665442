// The fused kernel, written once over a vector type V that each ISA file
// defines (narrow_simd_avx2.cc; narrow_simd_avx512_vector.h, which
// narrow_simd_avx512.cc and narrow_simd_avx512bf16.cc use). Include it only
// there, after the file's `#pragma GCC target`, so that the kernel is
// compiled for that ISA, and after every standard header, so that no inline
// library function is compiled for it: the linker could pick such a copy for
// the whole program. Everything here has internal linkage for the same reason.
//
// V provides:
// - F (fp32 vector), I (its lanes as 32-bit integers), M (a lane mask), H and
//   Q (the same lanes as 16-bit and as 8-bit codes), kLanes;
// - set1, set1i, bits/floats (casts);
// - loadAcc/storeAcc, a load for each format (loadHalf, loadBf16, loadE4m3,
//   loadE5m2), packHalf, store of an H into uint16_t codes, of a Q into
//   uint8_t codes and of an F into floats, stream of an H and of an F (past
//   the cache);
// - the fp32 add, mul, div, max, min; max and min follow reduce_ops.h:
//   NaN-propagating, +0 above -0;
// - the integer operations the roundings below need: iadd, isub, iand, ior,
//   srl, minu, below and above (compares of values under 2^31, giving an M),
//   where (a select by M), words and bytes (pack lanes holding codes into an
//   H or a Q);
// - optionally convertBf16 and anySubnormal (see packBf16).
#pragma once

// Needs <cstddef>, <cstdint>, <type_traits>, <utility> and narrow_simd.h, included first.

namespace hcl::narrow_simd {
namespace {

enum class Codec { Half, Bf16, E4m3, E5m2, F32 };

// The element type of a format's codes.
template <Codec C>
using Code = std::conditional_t<C == Codec::F32, float,
                                std::conditional_t<C == Codec::Half || C == Codec::Bf16, uint16_t, uint8_t>>;

enum class OpKind { Add, Mul, Max, Min, Copy };

template <class V, Codec C, Form F>
typename V::F loadAt(const void* base, size_t i) {
  if constexpr (F == Form::Acc)
    return V::loadAcc(static_cast<const float*>(base) + i);
  const Code<C>* codes = static_cast<const Code<C>*>(base) + i;
  if constexpr (C == Codec::Half) return V::loadHalf(codes);
  if constexpr (C == Codec::Bf16) return V::loadBf16(codes);
  if constexpr (C == Codec::E4m3) return V::loadE4m3(codes);
  if constexpr (C == Codec::E5m2) return V::loadE5m2(codes);
  if constexpr (C == Codec::F32) return V::loadAcc(codes);
}

// floatToBf16 (float_formats.h) lane by lane: NaNs keep their top bits and
// are quieted, everything else rounds to nearest-even on the integer bits.
// Where V has a conversion instruction that does the same for every value
// but fp32 subnormals (convertBf16, AVX512-BF16's, which flushes those to
// zero), blocks without subnormals take it.
template <class V>
typename V::H packBf16(typename V::F v) {
  if constexpr (requires { V::convertBf16(v); }) {
    if (!V::anySubnormal(v)) [[likely]]
      return V::convertBf16(v);
  }
  using I = typename V::I;
  const I x = V::bits(v);
  const I high = V::srl(x, 16);
  const I bias = V::iadd(V::set1i(0x7FFF), V::iand(high, V::set1i(1)));
  const I rounded = V::srl(V::iadd(x, bias), 16);
  const I quietNaN = V::ior(high, V::set1i(0x40));
  const typename V::M nan = V::above(V::iand(x, V::set1i(0x7FFFFFFF)), V::set1i(0x7F800000));
  return V::words(V::where(nan, quietNaN, rounded));
}

// The fp8 roundings follow the lane-wise loops of float_arrays.cc: magnitude
// codes of finite fp32 magnitudes in the format (M, B), rounded to
// nearest-even; past the largest finite code they come back larger than it.
// Below the smallest normal the fp32 adder rounds (see roundFp8Magnitude).
template <class V, int M, int B>
typename V::I roundFp8(typename V::I ax) {
  using I = typename V::I;
  constexpr int kShift = 23 - M;
  const I magic = V::set1i(uint32_t(151 - B - M) << 23);
  I r = V::isub(ax, V::set1i(uint32_t(127 - B) << 23));
  r = V::iadd(r, V::iadd(V::set1i((1u << (kShift - 1)) - 1), V::iand(V::srl(r, kShift), V::set1i(1))));
  const I normal = V::srl(r, kShift);
  const I subnormal = V::isub(V::bits(V::add(V::floats(ax), V::floats(magic))), magic);
  return V::where(V::below(ax, V::set1i(uint32_t(128 - B) << 23)), subnormal, normal);
}

// fp32 to the fp8 format (M, B): finite values saturate at kMaxCode, NaN is
// 0x7F (S.1111.111 in e4m3, a quiet NaN in e5m2), and where the format has
// infinities (e5m2), infinity is kMaxCode + 1.
template <class V, int M, int B, uint32_t kMaxCode, bool kHasInf>
typename V::Q packFp8(typename V::F v) {
  using I = typename V::I;
  const I x = V::bits(v), ax = V::iand(x, V::set1i(0x7FFFFFFF));
  I code = V::minu(roundFp8<V, M, B>(ax), V::set1i(kMaxCode));
  if constexpr (kHasInf) code = V::where(V::above(ax, V::set1i(0x7F7FFFFF)), V::set1i(kMaxCode + 1), code);
  code = V::where(V::above(ax, V::set1i(0x7F800000)), V::set1i(0x7F), code);
  return V::bytes(V::ior(code, V::iand(V::srl(x, 24), V::set1i(0x80))));
}

// The codes of a block: a V::H for 16-bit formats, a V::Q for fp8, the
// fp32 vector itself for float32.
template <class V, Codec C>
auto pack(typename V::F v) {
  if constexpr (C == Codec::F32) return v;
  if constexpr (C == Codec::Half) return V::packHalf(v);
  if constexpr (C == Codec::Bf16) return packBf16<V>(v);
  if constexpr (C == Codec::E4m3) return packFp8<V, 3, 7, 0x7E, false>(v);
  if constexpr (C == Codec::E5m2) return packFp8<V, 2, 15, 0x7B, true>(v);
}

template <class V, Codec C>
using Packed = decltype(pack<V, C>(std::declval<typename V::F>()));

template <class V, Codec C, bool Stream>
void put(void* base, size_t i, Packed<V, C> codes) {
  if constexpr (Stream)
    V::stream(static_cast<Code<C>*>(base) + i, codes);
  else
    V::store(static_cast<Code<C>*>(base) + i, codes);
}

template <class V, Codec C, Form F>
void storeAt(void* base, size_t i, typename V::F v) {
  if constexpr (F == Form::Acc)
    V::storeAcc(static_cast<float*>(base) + i, v);
  else
    put<V, C, false>(base, i, pack<V, C>(v));
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
// aliases an operand of its own width, or a wider one, is safe. The loops are
// flattened: GCC would leave the fp8 conversions out of line otherwise,
// passing vectors through memory.
template <class V, Codec C, OpKind O, Form DF, Form AF, Form BF>
[[gnu::flatten]] size_t runBlocks(const Call& c) {
  const size_t n = c.count / V::kLanes * V::kLanes;
  const BlockConstants<V> k(c);
  for (size_t i = 0; i < n; i += V::kLanes) storeAt<V, C, DF>(c.dst, i, blockResult<V, C, O, DF, AF, BF>(c, i, k));
  return n;
}

// runBlocks over Native operands, into two Native destinations at once.
template <class V, Codec C, OpKind O, bool Stream1, bool Stream2>
[[gnu::flatten]] size_t runBlocksTwice(const Call& c) {
  constexpr Form N = Form::Native;
  const size_t n = c.count / V::kLanes * V::kLanes;
  const BlockConstants<V> k(c);
  for (size_t i = 0; i < n; i += V::kLanes) {
    const Packed<V, C> codes = pack<V, C>(blockResult<V, C, O, N, N, N>(c, i, k));
    put<V, C, Stream1>(c.dst, i, codes);
    put<V, C, Stream2>(c.dst2, i, codes);
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
    // reduceTwice is not used for fp8 (reducesTwice in reduce_twice.cc); float32
    // takes the kernel only for it, reduce() has its own loops.
    case hclFloat8e4m3: return Twice ? 0 : runOp<V, Codec::E4m3, O>(c);
    case hclFloat8e5m2: return Twice ? 0 : runOp<V, Codec::E5m2, O>(c);
    case hclFloat32: return Twice ? runTwice<V, Codec::F32, O>(c) : 0;
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
