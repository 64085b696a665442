#include "collectives/reduce/float_arrays.h"

#include <algorithm>
#include <bit>

#include "collectives/reduce/float_formats.h"
#include "collectives/reduce/isa_clones.h"

namespace hcl {

HCL_ISA_CLONES void halfToFloatSoftware(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = halfToFloat(src[i]);
}

HCL_ISA_CLONES void floatToHalfSoftware(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = floatToHalf(src[i]);
}

namespace {

HCL_ISA_CLONES void bf16ToFloatArray(const uint16_t* __restrict src, float* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(bf16ToFloatBits(src[i]));
}

HCL_ISA_CLONES void floatToBf16Array(const float* __restrict src, uint16_t* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = floatToBf16(src[i]);
}

// The fp8 loops below use only lane-wise integer and fp32 operations and
// selects (no tables, branches or variable shifts), so every ISA level
// vectorizes them. They give the same codes as float_formats.h.

// fp32 bits of the fp8 magnitude `mag` (< 0x80) of format (M, B), finite codes.
template <int M, int B>
uint32_t decodeFp8Magnitude(uint32_t mag) {
  constexpr float kUnit = std::bit_cast<float>(uint32_t(127 + 1 - B - M) << 23);
  const uint32_t normal = (mag << (23 - M)) + (uint32_t(127 - B) << 23);
  const uint32_t subnormal = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int32_t>(mag)) * kUnit);
  return (mag >> M) != 0 ? normal : subnormal;
}

// The magnitude code of finite fp32 bits `ax`, rounded to nearest-even; codes
// past the format's largest finite value come back larger than it. Below the
// smallest normal the fp32 adder does the rounding: adding 2^(24-B-M), whose
// unit in the last place is the format's subnormal step, leaves the code in
// the sum's low bits (round-to-nearest, the mode the reduction runs in).
template <int M, int B>
uint32_t roundFp8Magnitude(uint32_t ax) {
  constexpr uint32_t kShift = 23 - M;
  constexpr uint32_t kMinNormal = uint32_t(127 - B + 1) << 23;
  constexpr uint32_t kMagic = uint32_t(127 + 24 - B - M) << 23;
  uint32_t r = ax - (uint32_t(127 - B) << 23);
  r += ((1u << (kShift - 1)) - 1) + ((r >> kShift) & 1u);
  const uint32_t normal = r >> kShift;
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(std::bit_cast<float>(ax) + std::bit_cast<float>(kMagic)) - kMagic;
  return ax < kMinNormal ? subnormal : normal;
}

HCL_ISA_CLONES void e4m3ToFloatArray(const uint8_t* __restrict src, float* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = src[i], sign = (c & 0x80u) << 24, mag = c & 0x7Fu;
    const uint32_t bits = mag == kE4m3NaN ? 0x7FC00000u : decodeFp8Magnitude<3, 7>(mag);
    dst[i] = std::bit_cast<float>(sign | bits);
  }
}

HCL_ISA_CLONES void e5m2ToFloatArray(const uint8_t* __restrict src, float* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t c = src[i], sign = (c & 0x80u) << 24, mag = c & 0x7Fu;
    const uint32_t special = mag == kE5m2Inf ? 0x7F800000u : 0x7FC00000u | ((mag & 3u) << 21);
    const uint32_t bits = mag >= kE5m2Inf ? special : decodeFp8Magnitude<2, 15>(mag);
    dst[i] = std::bit_cast<float>(sign | bits);
  }
}

HCL_ISA_CLONES void floatToE4m3Array(const float* __restrict src, uint8_t* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = std::bit_cast<uint32_t>(src[i]), sign = (x >> 24) & 0x80u, ax = x & 0x7FFFFFFFu;
    const uint32_t code = std::min(roundFp8Magnitude<3, 7>(ax), uint32_t(kE4m3MaxCode));
    dst[i] = static_cast<uint8_t>(sign | (ax > 0x7F800000u ? uint32_t(kE4m3NaN) : code));
  }
}

HCL_ISA_CLONES void floatToE5m2Array(const float* __restrict src, uint8_t* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = std::bit_cast<uint32_t>(src[i]), sign = (x >> 24) & 0x80u, ax = x & 0x7FFFFFFFu;
    const uint32_t finite = std::min(roundFp8Magnitude<2, 15>(ax), uint32_t(kE5m2MaxCode));
    // Infinity keeps its code (0x7C); NaN gets 0x7F, the same code with the low bits set.
    const uint32_t code = ax >= 0x7F800000u ? uint32_t(kE5m2Inf) : finite;
    const uint32_t nanBits = ax > 0x7F800000u ? 3u : 0u;
    dst[i] = static_cast<uint8_t>(sign | code | nanBits);
  }
}

}  // namespace

void widenToFloat(hclDataType_t t, const void* src, float* dst, size_t n) {
  switch (t) {
    case hclFloat16:
      if (cpuHasF16C())
        halfToFloatF16C(static_cast<const uint16_t*>(src), dst, n);
      else
        halfToFloatSoftware(static_cast<const uint16_t*>(src), dst, n);
      return;
    case hclBfloat16: bf16ToFloatArray(static_cast<const uint16_t*>(src), dst, n); return;
    case hclFloat8e4m3:
      e4m3ToFloatArray(static_cast<const uint8_t*>(src), dst, n);
      return;
    case hclFloat8e5m2:
      e5m2ToFloatArray(static_cast<const uint8_t*>(src), dst, n);
      return;
    default: return;
  }
}

void narrowFromFloat(hclDataType_t t, const float* src, void* dst, size_t n) {
  switch (t) {
    case hclFloat16:
      if (cpuHasF16C())
        floatToHalfF16C(src, static_cast<uint16_t*>(dst), n);
      else
        floatToHalfSoftware(src, static_cast<uint16_t*>(dst), n);
      return;
    case hclBfloat16: floatToBf16Array(src, static_cast<uint16_t*>(dst), n); return;
    case hclFloat8e4m3: floatToE4m3Array(src, static_cast<uint8_t*>(dst), n); return;
    case hclFloat8e5m2: floatToE5m2Array(src, static_cast<uint8_t*>(dst), n); return;
    default: return;
  }
}

}  // namespace hcl
