#include "perf/common/float_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "perf/common/names.h"

namespace hcl::perf {
namespace {

// A binary floating-point format narrower than float32.
struct Format {
  int expBits;
  int manBits;
  int bias;
  bool hasInf;  // IEEE-style: the all-ones exponent is inf/NaN
  double maxFinite;
  bool saturates;  // finite overflow gives maxFinite instead of inf
};

constexpr Format kHalf{5, 10, 15, true, 65504.0, false};
constexpr Format kBf16{8, 7, 127, true, 3.38953138925153547590470800371487866880e38, false};
constexpr Format kE4m3{4, 3, 7, false, 448.0, true};
constexpr Format kE5m2{5, 2, 15, true, 57344.0, true};

const Format* narrowFormat(hclDataType_t type) {
  switch (type) {
    case hclFloat16: return &kHalf;
    case hclBfloat16: return &kBf16;
    case hclFloat8e4m3: return &kE4m3;
    case hclFloat8e5m2: return &kE5m2;
    default: return nullptr;
  }
}

uint64_t signBit(const Format& f) { return uint64_t{1} << (f.expBits + f.manBits); }
uint64_t expMask(const Format& f) { return (uint64_t{1} << f.expBits) - 1; }

uint64_t maxFiniteBits(const Format& f) {
  // e4m3 has no inf: its largest finite value uses the top exponent with
  // mantissa 110 (111 is NaN).
  if (!f.hasInf) return (expMask(f) << f.manBits) | ((uint64_t{1} << f.manBits) - 2);
  return ((expMask(f) - 1) << f.manBits) | ((uint64_t{1} << f.manBits) - 1);
}

uint64_t infBits(const Format& f) { return f.hasInf ? expMask(f) << f.manBits : maxFiniteBits(f); }

uint64_t encodeNarrow(const Format& f, double x) {
  const uint64_t sign = std::signbit(x) ? signBit(f) : 0;
  double a = std::fabs(x);
  if (std::isinf(a)) return sign | infBits(f);
  if (a == 0) return sign;
  const int minExp = 1 - f.bias;  // exponent of the smallest normal
  int e = std::max(std::ilogb(a), minExp);
  const double quantum = std::ldexp(1.0, e - f.manBits);
  a = std::nearbyint(a / quantum) * quantum;  // ties to even in the default rounding mode
  if (a > f.maxFinite) return sign | (f.saturates ? maxFiniteBits(f) : infBits(f));
  if (a == 0) return sign;
  e = std::ilogb(a);
  if (e < minExp) return sign | static_cast<uint64_t>(a / std::ldexp(1.0, minExp - f.manBits));
  const auto mantissa = static_cast<uint64_t>(a / std::ldexp(1.0, e - f.manBits)) - (uint64_t{1} << f.manBits);
  return sign | (static_cast<uint64_t>(e + f.bias) << f.manBits) | mantissa;
}

double decodeNarrow(const Format& f, uint64_t bits) {
  const bool negative = (bits & signBit(f)) != 0;
  const uint64_t exponent = (bits >> f.manBits) & expMask(f);
  const uint64_t mantissa = bits & ((uint64_t{1} << f.manBits) - 1);
  double v;
  if (f.hasInf && exponent == expMask(f)) {
    v = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.hasInf && exponent == expMask(f) && mantissa == (uint64_t{1} << f.manBits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.manBits);
  } else {
    v = std::ldexp(static_cast<double>(mantissa | (uint64_t{1} << f.manBits)),
                   static_cast<int>(exponent) - f.bias - f.manBits);
  }
  return negative ? -v : v;
}

}  // namespace

uint64_t loadBits(const void* p, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);  // little-endian hosts
  return v;
}

void storeBits(void* p, uint64_t bits, size_t size) { std::memcpy(p, &bits, size); }

uint64_t encodeFloat(hclDataType_t type, double x) {
  if (type == hclFloat32) {
    const float f = static_cast<float>(x);
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  }
  if (type == hclFloat64) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    return b;
  }
  return encodeNarrow(*narrowFormat(type), x);
}

double decodeFloat(hclDataType_t type, uint64_t bits) {
  if (type == hclFloat32) {
    const auto b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  if (type == hclFloat64) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  return decodeNarrow(*narrowFormat(type), bits);
}

uint64_t encodeInteger(hclDataType_t type, int64_t v) {
  const size_t bits = 8 * typeSize(type);
  const auto u = static_cast<uint64_t>(v);
  return bits == 64 ? u : u & ((uint64_t{1} << bits) - 1);
}

int64_t decodeInteger(hclDataType_t type, uint64_t bits) {
  switch (type) {
    case hclInt8: return static_cast<int8_t>(bits);
    case hclInt32: return static_cast<int32_t>(bits);
    case hclInt64: return static_cast<int64_t>(bits);
    default: return static_cast<int64_t>(bits);
  }
}

uint64_t ulpDistance(hclDataType_t type, uint64_t a, uint64_t b) {
  if (std::isnan(decodeFloat(type, a)) || std::isnan(decodeFloat(type, b))) return UINT64_MAX;
  const size_t width = 8 * typeSize(type);
  const uint64_t sign = uint64_t{1} << (width - 1);
  // Sign-magnitude to a monotonic integer line.
  auto ordered = [sign](uint64_t v) {
    const auto magnitude = static_cast<int64_t>(v & (sign - 1));
    return (v & sign) ? -magnitude : magnitude;
  };
  const int64_t d = ordered(a) - ordered(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

}  // namespace hcl::perf
