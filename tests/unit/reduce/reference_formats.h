// Independent reference for the narrow float formats: codes are decoded with
// ldexp from the format's definition, and values are encoded by searching the
// sorted list of every finite code for the nearest one. Nothing here shares
// code or method with collectives/reduce/float_formats.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/datatype.h"

namespace hcl::testref {

struct RefFormat {
  hclDataType_t type;
  int expBits;
  int manBits;
  int bias;
  bool ieeeSpecials;  // top exponent is inf/NaN; otherwise only S.1111.111 is NaN (E4M3FN)
  bool overflowToInf; // finite overflow rounds to inf; otherwise saturates to the max

  int bits() const { return 1 + expBits + manBits; }
  uint32_t signBit() const { return 1u << (expBits + manBits); }
  uint32_t maxExpField() const { return (1u << expBits) - 1; }
  uint32_t magnitudeMask() const { return signBit() - 1; }

  bool isNaN(uint32_t code) const {
    const uint32_t mag = code & magnitudeMask();
    if (ieeeSpecials) return (mag >> manBits) == maxExpField() && (mag & ((1u << manBits) - 1));
    return mag == magnitudeMask();
  }

  double decode(uint32_t code) const {
    const bool neg = code & signBit();
    const uint32_t mag = code & magnitudeMask();
    const uint32_t e = mag >> manBits;
    const uint32_t m = mag & ((1u << manBits) - 1);
    double v;
    if (isNaN(code)) return std::numeric_limits<double>::quiet_NaN();
    if (ieeeSpecials && e == maxExpField())
      v = std::numeric_limits<double>::infinity();
    else if (e == 0)
      v = std::ldexp(double(m), 1 - bias - manBits);
    else
      v = std::ldexp(double((1u << manBits) + m), int(e) - bias - manBits);
    return neg ? -v : v;
  }

  // Largest finite magnitude code.
  uint32_t maxCode() const {
    if (ieeeSpecials) return (maxExpField() << manBits) - 1;
    return magnitudeMask() - 1;
  }
  uint32_t infCode() const { return maxExpField() << manBits; }
};

inline const RefFormat kRefHalf{hclFloat16, 5, 10, 15, true, true};
inline const RefFormat kRefBf16{hclBfloat16, 8, 7, 127, true, true};
inline const RefFormat kRefE4m3{hclFloat8e4m3, 4, 3, 7, false, false};
inline const RefFormat kRefE5m2{hclFloat8e5m2, 5, 2, 15, true, false};

inline const RefFormat& refFormat(hclDataType_t t) {
  switch (t) {
    case hclFloat16: return kRefHalf;
    case hclBfloat16: return kRefBf16;
    case hclFloat8e4m3: return kRefE4m3;
    default: return kRefE5m2;
  }
}

// Encodes a double by nearest search over all finite codes (ties to the even code).
class RefEncoder {
 public:
  explicit RefEncoder(const RefFormat& f) : f_(f) {
    for (uint32_t c = 0; c <= f.maxCode(); ++c) values_.push_back(f.decode(c));
  }

  uint32_t encode(double v) const {
    if (std::isnan(v)) return f_.magnitudeMask();  // all-ones magnitude is NaN in every format here
    const uint32_t sign = std::signbit(v) ? f_.signBit() : 0u;
    const double a = std::fabs(v);
    const double maxVal = values_.back();
    if (std::isinf(a)) return sign | (f_.ieeeSpecials ? f_.infCode() : f_.maxCode());
    if (a > maxVal) {
      if (!f_.overflowToInf) return sign | f_.maxCode();
      const double ulpAtMax = maxVal - values_[values_.size() - 2];
      return sign | (a >= maxVal + ulpAtMax / 2 ? f_.infCode() : f_.maxCode());
    }
    const auto it = std::lower_bound(values_.begin(), values_.end(), a);
    const uint32_t hi = uint32_t(it - values_.begin());
    if (values_[hi] == a || hi == 0) return sign | hi;
    const uint32_t lo = hi - 1;
    const double dlo = a - values_[lo], dhi = values_[hi] - a;
    if (dlo < dhi) return sign | lo;
    if (dhi < dlo) return sign | hi;
    return sign | ((lo % 2 == 0) ? lo : hi);
  }

  const std::vector<double>& positiveValues() const { return values_; }

 private:
  RefFormat f_;
  std::vector<double> values_;  // value of every finite non-negative code, ascending
};

inline const RefEncoder& refEncoder(hclDataType_t t) {
  static const RefEncoder half(kRefHalf), bf16(kRefBf16), e4m3(kRefE4m3), e5m2(kRefE5m2);
  switch (t) {
    case hclFloat16: return half;
    case hclBfloat16: return bf16;
    case hclFloat8e4m3: return e4m3;
    default: return e5m2;
  }
}

// Rounds a double to the nearest fp32 value (ties to even), as a double.
inline double roundToF32(double x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  constexpr double kMax = std::numeric_limits<float>::max();
  constexpr double kOverflow = 0x1.ffffffp127;  // halfway between FLT_MAX and 2^128
  if (std::fabs(x) >= kOverflow) return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (std::fabs(x) > kMax) return std::copysign(kMax, x);
  return double(static_cast<float>(x));
}

}  // namespace hcl::testref
