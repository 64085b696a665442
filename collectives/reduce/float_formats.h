// Bit-exact scalar conversions between fp32 and the narrow float formats
// (fp16, bf16, fp8 e4m3, fp8 e5m2). Every conversion to a narrow format rounds
// to nearest, ties to even, and handles subnormals; see docs/numerics.md for
// the overflow and NaN rules of each format.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace hcl {

namespace floatfmt_detail {

constexpr uint32_t kF32ExpMask = 0x7F800000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32QuietBit = 0x00400000u;

// A finite, non-negative fp32 value (its bits, `ax`) rounded to nearest-even in
// a format with kManBits stored mantissa bits and exponent bias kBias, returned
// as that format's magnitude code. Codes past the largest finite value (and for
// ax = +inf) come back larger than any finite code; callers apply their
// format's overflow rule. fp32 subnormals are far below the smallest
// subnormal of every format here and round to zero.
template <int kManBits, int kBias>
constexpr uint32_t roundMagnitude(uint32_t ax) {
  constexpr uint32_t kShift = 23 - kManBits;
  constexpr uint32_t kRebias = uint32_t(127 - kBias) << 23;
  constexpr uint32_t kMinNormalExp = 127 - kBias + 1;  // fp32 exponent field
  const uint32_t exp = ax >> 23;
  if (exp >= kMinNormalExp) {
    uint32_t r = ax - kRebias;
    r += ((1u << (kShift - 1)) - 1) + ((r >> kShift) & 1u);
    return r >> kShift;
  }
  if (exp == 0) return 0;
  // Subnormal result: count units of 2^(1 - kBias - kManBits).
  const uint32_t shift = 151 - kBias - kManBits - exp;  // > kShift
  if (shift > 24) return 0;                             // below half a unit
  const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal
  return q;
}

// fp32 bits of a finite magnitude code of the format (kManBits, kBias).
template <int kManBits, int kBias>
constexpr uint32_t decodeMagnitude(uint32_t code) {
  const uint32_t exp = code >> kManBits;
  const uint32_t mant = code & ((1u << kManBits) - 1);
  if (exp == 0) {
    constexpr float kUnit = std::bit_cast<float>(uint32_t(127 + 1 - kBias - kManBits) << 23);
    return std::bit_cast<uint32_t>(static_cast<float>(mant) * kUnit);  // exact
  }
  return ((exp + 127 - kBias) << 23) | (mant << (23 - kManBits));
}

}  // namespace floatfmt_detail

// ---- fp16 (IEEE binary16): bias 15, max 65504, overflow rounds to inf. ----

// NaN payloads are kept and quieted, matching x86 F16C (vcvtph2ps/vcvtps2ph).
constexpr uint32_t halfToFloatBits(uint16_t h) {
  using namespace floatfmt_detail;
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t mag = h & 0x7FFFu;
  if (mag >= 0x7C00u) {
    const uint32_t payload = (mag & 0x3FFu) << 13;
    return sign | kF32ExpMask | payload | (payload ? kF32QuietBit : 0u);
  }
  return sign | decodeMagnitude<10, 15>(mag);
}

constexpr uint16_t floatToHalf(float f) {
  using namespace floatfmt_detail;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return uint16_t(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  return uint16_t(sign | std::min(roundMagnitude<10, 15>(ax), 0x7C00u));
}

inline float halfToFloat(uint16_t h) { return std::bit_cast<float>(halfToFloatBits(h)); }

// ---- bf16: the top half of fp32; overflow rounds to inf. ----

constexpr uint32_t bf16ToFloatBits(uint16_t h) { return uint32_t(h) << 16; }

constexpr uint16_t floatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & floatfmt_detail::kF32AbsMask) > floatfmt_detail::kF32ExpMask)
    return uint16_t((x >> 16) | 0x40u);  // quiet NaN, sign and top payload kept
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16ToFloat(uint16_t h) { return std::bit_cast<float>(bf16ToFloatBits(h)); }

// ---- fp8 e4m3 (OCP E4M3FN): bias 7, max 448, no inf, NaN = S.1111.111. ----
// Finite overflow and +-inf saturate to +-448.

constexpr uint8_t kE4m3NaN = 0x7F;
constexpr uint8_t kE4m3MaxCode = 0x7E;

constexpr uint32_t e4m3ToFloatBits(uint8_t c) {
  using namespace floatfmt_detail;
  const uint32_t sign = uint32_t(c & 0x80u) << 24;
  const uint32_t mag = c & 0x7Fu;
  if (mag == kE4m3NaN) return sign | kF32ExpMask | kF32QuietBit;
  return sign | decodeMagnitude<3, 7>(mag);
}

constexpr uint8_t floatToE4m3(float f) {
  using namespace floatfmt_detail;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return uint8_t(sign | kE4m3NaN);
  return uint8_t(sign | std::min(roundMagnitude<3, 7>(ax), uint32_t(kE4m3MaxCode)));
}

// ---- fp8 e5m2: bias 15, max 57344, IEEE-like inf and NaN. ----
// Finite overflow saturates to +-57344; +-inf stays inf.

constexpr uint8_t kE5m2Inf = 0x7C;
constexpr uint8_t kE5m2NaN = 0x7F;
constexpr uint8_t kE5m2MaxCode = 0x7B;

constexpr uint32_t e5m2ToFloatBits(uint8_t c) {
  using namespace floatfmt_detail;
  const uint32_t sign = uint32_t(c & 0x80u) << 24;
  const uint32_t mag = c & 0x7Fu;
  if (mag == kE5m2Inf) return sign | kF32ExpMask;
  if (mag > kE5m2Inf) return sign | kF32ExpMask | kF32QuietBit | ((mag & 3u) << 21);
  return sign | decodeMagnitude<2, 15>(mag);
}

constexpr uint8_t floatToE5m2(float f) {
  using namespace floatfmt_detail;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return uint8_t(sign | kE5m2NaN);
  if (ax == kF32ExpMask) return uint8_t(sign | kE5m2Inf);
  return uint8_t(sign | std::min(roundMagnitude<2, 15>(ax), uint32_t(kE5m2MaxCode)));
}

// fp32 bits of every fp8 code, for table-driven widening.
template <uint32_t (*kDecode)(uint8_t)>
constexpr std::array<uint32_t, 256> makeFp8Table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t c = 0; c < 256; ++c) t[c] = kDecode(uint8_t(c));
  return t;
}

inline constexpr std::array<uint32_t, 256> kE4m3ToFloatBits = makeFp8Table<e4m3ToFloatBits>();
inline constexpr std::array<uint32_t, 256> kE5m2ToFloatBits = makeFp8Table<e5m2ToFloatBits>();

inline float e4m3ToFloat(uint8_t c) { return std::bit_cast<float>(kE4m3ToFloatBits[c]); }
inline float e5m2ToFloat(uint8_t c) { return std::bit_cast<float>(kE5m2ToFloatBits[c]); }

}  // namespace hcl
