// The fused fp16/bf16 kernels with AVX2 and F16C (8 fp32 lanes).
#include "collectives/reduce/narrow_simd.h"

#ifdef HCL_NARROW_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#pragma GCC push_options
#pragma GCC target("avx2,f16c")

#include "collectives/reduce/narrow_simd_kernels.h"

namespace hcl::narrow_simd {
namespace {

struct Avx2 {
  using F = __m256;
  using I = __m256i;
  using H = __m128i;
  static constexpr size_t kLanes = 8;

  static F set1(float v) { return _mm256_set1_ps(v); }
  static I bits(F v) { return _mm256_castps_si256(v); }
  static F floats(I v) { return _mm256_castsi256_ps(v); }

  static F loadAcc(const float* p) { return _mm256_loadu_ps(p); }
  static void storeAcc(float* p, F v) { _mm256_storeu_ps(p, v); }

  static void store(uint16_t* p, H h) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h); }
  static void stream(uint16_t* p, H h) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), h); }
  static void storeFence() { _mm_sfence(); }

  static F loadHalf(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static H packHalf(F v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  static F loadBf16(const uint16_t* p) {
    const I wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return floats(_mm256_slli_epi32(wide, 16));
  }
  // As in narrow_simd_avx512.cc. The magnitude has no sign bit, so a signed
  // compare finds the NaNs; every code fits 16 bits, so packing with unsigned
  // saturation keeps it.
  static H packBf16(F v) {
    const I x = bits(v);
    const I high = _mm256_srli_epi32(x, 16);
    const I bias = _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), _mm256_and_si256(high, _mm256_set1_epi32(1)));
    const I rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    const I quietNaN = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    const I nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
    const I code = _mm256_blendv_epi8(rounded, quietNaN, nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
  }

  static F add(F x, F y) { return _mm256_add_ps(x, y); }
  static F mul(F x, F y) { return _mm256_mul_ps(x, y); }
  static F div(F x, F y) { return _mm256_div_ps(x, y); }
  static F max(F x, F y) {
    F r = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, y, _CMP_GT_OQ));
    r = _mm256_blendv_ps(r, _mm256_and_ps(x, y), _mm256_cmp_ps(x, y, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
  static F min(F x, F y) {
    F r = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, y, _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, _mm256_or_ps(x, y), _mm256_cmp_ps(x, y, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
};

}  // namespace

size_t detail::reduceAvx2(const Call& call) { return reduceWith<Avx2>(call); }
size_t detail::convertAvx2(const Call& call) { return convertWith<Avx2>(call); }
size_t detail::reduceTwiceAvx2(const Call& call) { return reduceTwiceWith<Avx2>(call); }

}  // namespace hcl::narrow_simd

#pragma GCC pop_options

#endif
