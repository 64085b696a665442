// The fused fp16/bf16 kernels with AVX-512 (16 fp32 lanes).
#include "collectives/reduce/narrow_simd.h"

#ifdef HCL_NARROW_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,f16c")
// GCC 12's AVX-512 conversion intrinsics start from _mm512_undefined_*(),
// which it then reports as (maybe) uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "collectives/reduce/narrow_simd_kernels.h"

namespace hcl::narrow_simd {
namespace {

struct Avx512 {
  using F = __m512;
  using I = __m512i;
  using H = __m256i;
  static constexpr size_t kLanes = 16;

  static F set1(float v) { return _mm512_set1_ps(v); }
  static I bits(F v) { return _mm512_castps_si512(v); }
  static F floats(I v) { return _mm512_castsi512_ps(v); }

  static F loadAcc(const float* p) { return _mm512_loadu_ps(p); }
  static void storeAcc(float* p, F v) { _mm512_storeu_ps(p, v); }

  static void store(uint16_t* p, H h) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h); }
  static void stream(uint16_t* p, H h) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h); }
  static void storeFence() { _mm_sfence(); }

  static F loadHalf(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static H packHalf(F v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  static F loadBf16(const uint16_t* p) {
    const I wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return floats(_mm512_slli_epi32(wide, 16));
  }
  // floatToBf16 (float_formats.h) lane by lane: NaNs keep their top bits and
  // are quieted, everything else rounds to nearest-even on the integer bits.
  static H packBf16(F v) {
    const I x = bits(v);
    const I high = _mm512_srli_epi32(x, 16);
    const I bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), _mm512_and_si512(high, _mm512_set1_epi32(1)));
    const I rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
    const I quietNaN = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    const I code = _mm512_mask_blend_epi32(nan, rounded, quietNaN);
    return _mm512_cvtepi32_epi16(code);
  }

  static F add(F x, F y) { return _mm512_add_ps(x, y); }
  static F mul(F x, F y) { return _mm512_mul_ps(x, y); }
  static F div(F x, F y) { return _mm512_div_ps(x, y); }
  // Max and Min of reduce_ops.h: y where x is not above (below) it, the
  // bitwise and (or) of equal values, so +0 beats -0, and x where x is NaN.
  static F max(F x, F y) {
    F r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_GT_OQ), y, x);
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_EQ_OQ), r, floats(_mm512_and_si512(bits(x), bits(y))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);
  }
  static F min(F x, F y) {
    F r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_LT_OQ), y, x);
    r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_EQ_OQ), r, floats(_mm512_or_si512(bits(x), bits(y))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);
  }
};

}  // namespace

size_t detail::reduceAvx512(const Call& call) { return reduceWith<Avx512>(call); }
size_t detail::convertAvx512(const Call& call) { return convertWith<Avx512>(call); }
size_t detail::reduceTwiceAvx512(const Call& call) { return reduceTwiceWith<Avx512>(call); }

}  // namespace hcl::narrow_simd

#pragma GCC diagnostic pop
#pragma GCC pop_options

#endif
