// Element encoding for every data type, written independently of HCL's own
// conversion kernels on purpose: expected results are computed here, so a
// rounding bug in the library cannot hide behind the same bug in the check.
// Rounding follows docs/numerics.md: round to nearest, ties to even; float16
// and bfloat16 overflow to infinity, fp8 e4m3 and e5m2 saturate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hcl.h"

namespace hcl::perf {

// The bits of x rounded to a floating-point type (x must not be NaN).
uint64_t encodeFloat(hclDataType_t type, double x);
// The value of a floating-point type's bit pattern.
double decodeFloat(hclDataType_t type, uint64_t bits);
// The low bits of v, i.e. v modulo 2^width, for an integer type.
uint64_t encodeInteger(hclDataType_t type, int64_t v);
// The value of an integer type's bit pattern (sign-extended for signed types).
int64_t decodeInteger(hclDataType_t type, uint64_t bits);

uint64_t loadBits(const void* p, size_t size);
void storeBits(void* p, uint64_t bits, size_t size);

// Units in the last place between two bit patterns of a floating-point type;
// UINT64_MAX when either is NaN.
uint64_t ulpDistance(hclDataType_t type, uint64_t a, uint64_t b);

}  // namespace hcl::perf
