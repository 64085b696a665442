// Random reduction operands and the comparison GPU results are held to,
// shared by the GPU tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/reduce/float_formats.h"
#include "collectives/reduce/reduce.h"
#include "core/datatype.h"

namespace hcl::gputest {

inline std::vector<uint8_t> makeOperand(hclDataType_t t, Form f, size_t n, std::mt19937_64& rng) {
  const size_t es = formElementSize(t, f);
  std::vector<uint8_t> v(n * es);
  std::uniform_real_distribution<double> val(-300.0, 300.0);
  const float specials[] = {0.0f, -0.0f, 1e-40f, -1e-42f, INFINITY, -INFINITY, NAN, 65504.0f, 448.0f, 3e38f};
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = v.data() + i * es;
    const bool special = rng() % 16 == 0;
    if (t == hclFloat32 || (f == Form::Acc && es == 4 && isFloatType(t))) {
      const float x = special ? specials[rng() % 10] : float(val(rng));
      std::memcpy(e, &x, 4);
    } else if (t == hclFloat64) {
      const double x = special ? double(specials[rng() % 10]) : val(rng);
      std::memcpy(e, &x, 8);
    } else {
      const uint64_t r = rng();
      std::memcpy(e, &r, es);
    }
  }
  return v;
}

// Bit-exact, except that any NaN matches any NaN (payloads differ between
// CPU and GPU arithmetic and are not part of the contract).
inline bool sameResult(hclDataType_t t, Form f, const uint8_t* x, const uint8_t* y) {
  const size_t es = formElementSize(t, f);
  if (std::memcmp(x, y, es) == 0) return true;
  float fx, fy;
  if (es == 4 && isFloatType(t)) {
    std::memcpy(&fx, x, 4);
    std::memcpy(&fy, y, 4);
    return fx != fx && fy != fy;
  }
  if (t == hclFloat64) {
    double dx, dy;
    std::memcpy(&dx, x, 8);
    std::memcpy(&dy, y, 8);
    return dx != dx && dy != dy;
  }
  uint16_t hx = 0, hy = 0;
  std::memcpy(&hx, x, es);
  std::memcpy(&hy, y, es);
  switch (t) {
    case hclFloat16: fx = hcl::halfToFloat(hx), fy = hcl::halfToFloat(hy); break;
    case hclBfloat16: fx = bf16ToFloat(hx), fy = bf16ToFloat(hy); break;
    case hclFloat8e4m3: fx = e4m3ToFloat(uint8_t(hx)), fy = e4m3ToFloat(uint8_t(hy)); break;
    case hclFloat8e5m2: fx = e5m2ToFloat(uint8_t(hx)), fy = e5m2ToFloat(uint8_t(hy)); break;
    default: return false;
  }
  return fx != fx && fy != fy;
}

}  // namespace hcl::gputest
