// The fused kernels with AVX2 and F16C (8 fp32 lanes).
#include "collectives/reduce/narrow_simd.h"

#ifdef HCL_NARROW_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
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
  using Q = __m128i;  // eight codes in the low half
  using M = __m256i;
  static constexpr size_t kLanes = 8;

  static F set1(float v) { return _mm256_set1_ps(v); }
  static I set1i(uint32_t v) { return _mm256_set1_epi32(static_cast<int>(v)); }
  static I bits(F v) { return _mm256_castps_si256(v); }
  static F floats(I v) { return _mm256_castsi256_ps(v); }

  static F loadAcc(const float* p) { return _mm256_loadu_ps(p); }
  static void storeAcc(float* p, F v) { _mm256_storeu_ps(p, v); }

  static void store(uint16_t* p, H h) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h); }
  static void stream(uint16_t* p, H h) { _mm_stream_si128(reinterpret_cast<__m128i*>(p), h); }
  static void store(uint8_t* p, Q q) { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), q); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void stream(float* p, F v) { _mm256_stream_ps(p, v); }
  static void storeFence() { _mm_sfence(); }

  static F loadHalf(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static H packHalf(F v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  static F loadBf16(const uint16_t* p) {
    const I wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return floats(_mm256_slli_epi32(wide, 16));
  }
  // As in narrow_simd_avx512.cc.
  static F loadE4m3(const uint8_t* p) {
    const __m128i c = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i mag = _mm_and_si128(_mm_slli_epi16(c, 7), _mm_set1_epi16(0x3F80));
    const __m128i sign = _mm_and_si128(_mm_slli_epi16(c, 8), _mm_set1_epi16(-0x8000));
    const __m128i nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x3F80));
    const __m128i half = _mm_or_si128(_mm_blendv_epi8(mag, _mm_set1_epi16(0x7E00), nan), sign);
    return _mm256_mul_ps(_mm256_cvtph_ps(half), _mm256_set1_ps(256.0f));
  }
  static F loadE5m2(const uint8_t* p) {
    const __m128i codes = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_cvtph_ps(_mm_slli_epi16(codes, 8));
  }

  // Values under 2^31 order alike signed and unsigned, so below and above
  // use the signed compares; codes fit their width, so packing with unsigned
  // saturation keeps them.
  static I iadd(I a, I b) { return _mm256_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I iand(I a, I b) { return _mm256_and_si256(a, b); }
  static I ior(I a, I b) { return _mm256_or_si256(a, b); }
  static I srl(I a, int n) { return _mm256_srli_epi32(a, n); }
  static I minu(I a, I b) { return _mm256_min_epu32(a, b); }
  static M below(I a, I b) { return _mm256_cmpgt_epi32(b, a); }
  static M above(I a, I b) { return _mm256_cmpgt_epi32(a, b); }
  static I where(M m, I yes, I no) { return _mm256_blendv_epi8(no, yes, m); }
  static H words(I codes) {
    return _mm_packus_epi32(_mm256_castsi256_si128(codes), _mm256_extracti128_si256(codes, 1));
  }
  static Q bytes(I codes) {
    const __m128i w = words(codes);
    return _mm_packus_epi16(w, w);
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
