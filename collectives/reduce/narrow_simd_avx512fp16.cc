// fp16 reductions in AVX512-FP16's own arithmetic (Intel Sapphire Rapids and
// later): fp16 operands combined into an fp16 destination, 32 lanes at a
// time, with no widening to fp32 and back. Everything else goes to the
// AVX-512 kernels with AVX512-BF16 (narrow_simd.cc picks this level only
// where the CPU has both).
//
// The results are those of the fp32 kernels bit for bit. A sum or a product
// of two fp16 values rounded once to fp16 equals the same operation done in
// fp32 and then rounded to fp16: the product of two 11-bit significands is
// exact in fp32's 24 bits, and for a sum, rounding first to 24 bits and then
// to 11 never differs from rounding straight to 11 (24 >= 2 * 11 + 2). Both
// paths see fp16 subnormals as they are, whatever MXCSR's DAZ and FTZ say:
// widened they are fp32 normals, and AVX512-FP16 ignores both flags. Which NaN
// comes out follows the same x86 rule (the first NaN operand, quieted); max
// and min quiet a NaN they pass through, as widening does.
#include "collectives/reduce/narrow_simd.h"

#ifdef HCL_NARROW_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512fp16,avx2,f16c")
// As in narrow_simd_avx512.cc: GCC 12's AVX-512 intrinsics start from
// _mm512_undefined_*(), which it then reports as (maybe) uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace hcl::narrow_simd {
namespace {

enum class Op { Add, Mul, Max, Min };

constexpr size_t kLanes = 32;

__m512h load(const uint16_t* p) { return _mm512_castsi512_ph(_mm512_loadu_si512(p)); }
__m512h loadTail(const uint16_t* p, __mmask32 m) { return _mm512_castsi512_ph(_mm512_maskz_loadu_epi16(m, p)); }
__m512i bits(__m512h v) { return _mm512_castph_si512(v); }

void store(uint16_t* p, __m512h v) { _mm512_storeu_si512(p, bits(v)); }
// Streamed destinations are aligned to 16 fp16 lanes (reduce_twice.cc), so
// each half of a vector goes out on its own.
void stream(uint16_t* p, __m512h v) {
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p), _mm512_castsi512_si256(bits(v)));
  _mm256_stream_si256(reinterpret_cast<__m256i*>(p + 16), _mm512_extracti64x4_epi64(bits(v), 1));
}

template <bool Stream>
void put(uint16_t* p, __m512h v) {
  if constexpr (Stream)
    stream(p, v);
  else
    store(p, v);
}

// Max and min of reduce_ops.h (the fp32 kernels' V::max and V::min): y where
// x is not above (below) it, the bitwise and (or) of equal values, x where x
// is NaN; a NaN that comes out is quiet, as widening leaves it.
template <Op O>
__m512h combine(__m512h x, __m512h y) {
  if constexpr (O == Op::Add) return _mm512_add_ph(x, y);
  if constexpr (O == Op::Mul) return _mm512_mul_ph(x, y);
  const __m512i both = O == Op::Max ? _mm512_and_si512(bits(x), bits(y)) : _mm512_or_si512(bits(x), bits(y));
  const __mmask32 wins = _mm512_cmp_ph_mask(x, y, O == Op::Max ? _CMP_GT_OQ : _CMP_LT_OQ);
  __m512i r = _mm512_mask_blend_epi16(wins, bits(y), bits(x));
  r = _mm512_mask_blend_epi16(_mm512_cmp_ph_mask(x, y, _CMP_EQ_OQ), r, both);
  r = _mm512_mask_blend_epi16(_mm512_cmp_ph_mask(x, x, _CMP_UNORD_Q), r, bits(x));
  const __m512h v = _mm512_castsi512_ph(r);
  const __mmask32 nan = _mm512_cmp_ph_mask(v, v, _CMP_UNORD_Q);
  return _mm512_castsi512_ph(_mm512_mask_mov_epi16(r, nan, _mm512_or_si512(r, _mm512_set1_epi16(0x0200))));
}

template <Op O, bool Twice, bool Stream1, bool Stream2>
size_t run(const Call& c) {
  const auto* a = static_cast<const uint16_t*>(c.a);
  const auto* b = static_cast<const uint16_t*>(c.b);
  auto* dst = static_cast<uint16_t*>(c.dst);
  auto* dst2 = static_cast<uint16_t*>(c.dst2);
  const size_t blocks = c.count / kLanes * kLanes;
  for (size_t i = 0; i < blocks; i += kLanes) {
    const __m512h r = combine<O>(load(a + i), load(b + i));
    put<Stream1>(dst + i, r);
    if constexpr (Twice) put<Stream2>(dst2 + i, r);
  }
  if (blocks < c.count) {
    const __mmask32 m = (uint32_t{1} << (c.count - blocks)) - 1;
    const __m512i r = bits(combine<O>(loadTail(a + blocks, m), loadTail(b + blocks, m)));
    _mm512_mask_storeu_epi16(dst + blocks, m, r);
    if constexpr (Twice) _mm512_mask_storeu_epi16(dst2 + blocks, m, r);
  }
  if constexpr (Stream1 || Stream2) _mm_sfence();
  return c.count;
}

template <bool Twice, bool Stream1, bool Stream2>
size_t byOp(const Call& c) {
  switch (c.kind) {
    case ReduceKind::Sum: return run<Op::Add, Twice, Stream1, Stream2>(c);
    case ReduceKind::Prod: return run<Op::Mul, Twice, Stream1, Stream2>(c);
    case ReduceKind::Max: return run<Op::Max, Twice, Stream1, Stream2>(c);
    case ReduceKind::Min: return run<Op::Min, Twice, Stream1, Stream2>(c);
    default: return 0;  // Avg and PreMulSum scale in fp32
  }
}

bool takes(const Call& c) {
  return c.type == hclFloat16 && c.kind != ReduceKind::Avg && c.kind != ReduceKind::PreMulSum;
}

}  // namespace

size_t detail::reduceAvx512Fp16(const Call& c) {
  if (takes(c) && c.dstForm == Form::Native && c.aForm == Form::Native && c.bForm == Form::Native)
    return byOp<false, false, false>(c);
  return reduceAvx512Bf16(c);
}

size_t detail::reduceTwiceAvx512Fp16(const Call& c) {
  if (!takes(c)) return reduceTwiceAvx512Bf16(c);
  if (c.streamDst && c.streamDst2) return byOp<true, true, true>(c);
  if (c.streamDst) return byOp<true, true, false>(c);
  if (c.streamDst2) return byOp<true, false, true>(c);
  return byOp<true, false, false>(c);
}

}  // namespace hcl::narrow_simd

#pragma GCC diagnostic pop
#pragma GCC pop_options

#endif
