// Bulk conversions between the narrow float formats (fp16, bf16, fp8) and
// fp32, used by the reduction kernels chunk by chunk. Results are bit-exact
// with the scalar conversions of float_formats.h whichever path runs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/datatype.h"

namespace hcl {

inline bool isNarrowFloat(hclDataType_t t) {
  return t == hclFloat16 || t == hclBfloat16 || t == hclFloat8e4m3 || t == hclFloat8e5m2;
}

// src holds n values of the narrow type t; dst receives them as fp32 (exact).
void widenToFloat(hclDataType_t t, const void* src, float* dst, size_t n);

// Rounds n fp32 values to the narrow type t (nearest-even, format's overflow rules).
void narrowFromFloat(hclDataType_t t, const float* src, void* dst, size_t n);

// The two fp16 paths behind widenToFloat/narrowFromFloat, exposed for tests.
void halfToFloatSoftware(const uint16_t* src, float* dst, size_t n);
void floatToHalfSoftware(const float* src, uint16_t* dst, size_t n);

// x86 F16C instructions; call only when cpuHasF16C() is true.
bool cpuHasF16C();
void halfToFloatF16C(const uint16_t* src, float* dst, size_t n);
void floatToHalfF16C(const float* src, uint16_t* dst, size_t n);

}  // namespace hcl
