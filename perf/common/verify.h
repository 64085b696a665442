// Input data and expected results whose every element is predictable exactly.
//
// Reduction inputs are small integers drawn per (seed, rank, element index):
// {-1, 0, 1, 2} (unsigned: {0..3}) for sum, avg and mulsum, [-4, 4] (unsigned:
// [0, 8]) for min and max, and +-1 or +-2 for prod where only ranks 0..2 may
// contribute a 2. Every such value, and every product, is exact in every type
// including fp8 e5m2. Sums are exact in the fp32 accumulator for any rank
// count HCL can run, so the reduced value does not depend on the reduction
// order, and the expected element is that exact value rounded once to the
// type (wrapped modulo 2^width for integers), as docs/numerics.md specifies.
// Avg divides in the accumulator type, then rounds; it is the one case
// checked with a tolerance (2 ULP for floating-point types, as nccl-tests).
//
// Collectives that only move data get arbitrary bit patterns per (seed,
// owner, element index) and are compared bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hcl.h"

namespace hcl::perf {

// Op value for collectives without a reduction.
inline constexpr int kNoOp = -1;

// `count` elements of `rank`'s input whose global element indices start at `offset`.
void fillReductionInput(void* dst, size_t count, size_t offset, hclDataType_t type, int op, int rank, uint64_t seed);
// The reduction over ranks 0..nranks-1 of those inputs.
void fillReductionExpected(void* dst, size_t count, size_t offset, hclDataType_t type, int op, int nranks,
                           uint64_t seed);
// Arbitrary bit patterns belonging to `owner`.
void fillPattern(void* dst, size_t count, size_t offset, hclDataType_t type, int owner, uint64_t seed);

// The PreMulSum scalar of `rank`, in the data type's own representation.
uint64_t mulSumScalarBits(hclDataType_t type, int rank);

// Elements of `actual` that differ from `expected`.
int64_t countMismatches(const void* actual, const void* expected, size_t count, hclDataType_t type, int op);

// Changes element 0 so that it is wrong for every type and tolerance
// (HCL_PERF_INJECT_FAULT, a test-only knob).
void corruptFirstElement(void* p, hclDataType_t type);

}  // namespace hcl::perf
