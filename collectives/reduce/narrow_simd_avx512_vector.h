// The AVX-512 vector type of the fused kernels (narrow_simd_kernels.h says
// what it provides), shared by the AVX-512 kernel files. Include it only
// there, after narrow_simd_kernels.h, for the reasons that header gives.
#pragma once

namespace hcl::narrow_simd {
namespace {

struct Avx512 {
  using F = __m512;
  using I = __m512i;
  using H = __m256i;
  using Q = __m128i;
  using M = __mmask16;
  static constexpr size_t kLanes = 16;

  static F set1(float v) { return _mm512_set1_ps(v); }
  static I set1i(uint32_t v) { return _mm512_set1_epi32(static_cast<int>(v)); }
  static I bits(F v) { return _mm512_castps_si512(v); }
  static F floats(I v) { return _mm512_castsi512_ps(v); }

  static F loadAcc(const float* p) { return _mm512_loadu_ps(p); }
  static void storeAcc(float* p, F v) { _mm512_storeu_ps(p, v); }

  static void store(uint16_t* p, H h) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h); }
  static void stream(uint16_t* p, H h) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h); }
  static void store(uint8_t* p, Q q) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), q); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, F v) { _mm512_stream_ps(p, v); }
  static void storeFence() { _mm_sfence(); }

  static F loadHalf(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static H packHalf(F v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }

  static F loadBf16(const uint16_t* p) {
    const I wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return floats(_mm512_slli_epi32(wide, 16));
  }
  // An e4m3 magnitude shifted into an fp16 is that fp16's value times 2^8
  // (subnormals too); the NaN code becomes an fp16 quiet NaN, which the
  // scaling keeps. The result is float_formats.h's value, bit for bit.
  static F loadE4m3(const uint8_t* p) {
    const __m256i c = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i mag = _mm256_and_si256(_mm256_slli_epi16(c, 7), _mm256_set1_epi16(0x3F80));
    const __m256i sign = _mm256_and_si256(_mm256_slli_epi16(c, 8), _mm256_set1_epi16(-0x8000));
    const __m256i nan = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x3F80));
    const __m256i half = _mm256_or_si256(_mm256_blendv_epi8(mag, _mm256_set1_epi16(0x7E00), nan), sign);
    return _mm512_mul_ps(_mm512_cvtph_ps(half), _mm512_set1_ps(256.0f));
  }
  // An e5m2 code is the top byte of the fp16 of the same value, NaN payload
  // included, so F16C widens it.
  static F loadE5m2(const uint8_t* p) {
    const __m256i codes = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm512_cvtph_ps(_mm256_slli_epi16(codes, 8));
  }

  static I iadd(I a, I b) { return _mm512_add_epi32(a, b); }
  static I isub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I iand(I a, I b) { return _mm512_and_si512(a, b); }
  static I ior(I a, I b) { return _mm512_or_si512(a, b); }
  static I srl(I a, int n) { return _mm512_srli_epi32(a, static_cast<unsigned>(n)); }
  static I minu(I a, I b) { return _mm512_min_epu32(a, b); }
  static M below(I a, I b) { return _mm512_cmplt_epu32_mask(a, b); }
  static M above(I a, I b) { return _mm512_cmpgt_epu32_mask(a, b); }
  static I where(M m, I yes, I no) { return _mm512_mask_blend_epi32(m, no, yes); }
  static H words(I codes) { return _mm512_cvtepi32_epi16(codes); }
  static Q bytes(I codes) { return _mm512_cvtepi32_epi8(codes); }

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
}  // namespace hcl::narrow_simd
