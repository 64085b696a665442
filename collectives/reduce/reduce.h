// Element-wise reduction kernels for every data type and operator.
//
// Numerical contract (docs/numerics.md): values are combined in an
// accumulator type (fp32 for fp16/bf16/fp8, the type itself otherwise).
// Operands come in two forms:
//   Native: user data in the collective's data type, not yet scaled;
//   Acc:    a partial result already in accumulator form.
// Loading a Native operand widens it and, for PreMulSum, multiplies it by the
// scalar (in the accumulator type). Storing to a Native destination applies the
// final step (Avg divides by nranks) and rounds once to the data type.
#pragma once

#include <cstddef>

#include "core/datatype.h"

namespace hcl {

enum class Form : uint8_t { Native, Acc };

struct ReduceSpec {
  hclDataType_t type = hclFloat32;
  ReduceKind kind = ReduceKind::Sum;
  // PreMulSum scalar, already read from the user (in the data type's own
  // representation; for fp16/bf16/fp8 the fp32 value of it).
  double scalarFloat = 1.0;
  int64_t scalarInt = 1;
  uint64_t scalarUint = 1;
  int nranks = 1;  // for Avg
};

// dst[i] = combine(a[i], b[i]). Operands and destination may alias exactly
// (dst == a or dst == b) but must not partially overlap.
void reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
            size_t count, const ReduceSpec& spec);

// dst[i] = dst2[i] = combine(a[i], b[i]) over Native operands and
// destinations. Where reducesTwice(type), in one pass that stores each
// result into both, each destination past the cache where its flag says so
// (and where it can be aligned for that with the other; then ending with a
// store fence); otherwise reduce() into dst and a copy into dst2. dst and
// dst2 may each alias a or b exactly, not each other.
void reduceTwice(void* dst, void* dst2, const void* a, const void* b, size_t count, const ReduceSpec& spec,
                 bool streamDst, bool streamDst2);
// Whether reduceTwice stores both in one pass for this type here (today:
// fp16, bf16 and float32 on CPUs with AVX2 and F16C).
bool reducesTwice(hclDataType_t type);

// dst = src converted between forms (Native->Acc loads, Acc->Native stores,
// Native->Native is load+store, i.e. a single-rank reduction).
void convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
             const ReduceSpec& spec);

inline size_t formElementSize(hclDataType_t t, Form f) {
  return f == Form::Native ? dataTypeSize(t) : accumulatorSize(t);
}

}  // namespace hcl
