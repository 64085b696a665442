// The data types and reduction operators of the perf binaries, under the
// names nccl-tests prints and accepts (-d, -o).
#pragma once

#include <cstddef>
#include <span>

#include "hcl.h"

namespace hcl::perf {

// Every type, in nccl-tests' order (which is also hclDataType_t's order).
std::span<const hclDataType_t> allTypes();
const char* typeName(hclDataType_t type);  // "int8" ... "half", "float", "f8e4m3"
size_t typeSize(hclDataType_t type);

enum class TypeFamily { Unsigned, Signed, Float };
TypeFamily typeFamily(hclDataType_t type);
inline bool isFloat(hclDataType_t type) { return typeFamily(type) == TypeFamily::Float; }

// Operator indices as nccl-tests numbers them: the built-in hclRedOp_t values
// 0..4 (sum prod max min avg) and kMulSum, a PreMulSum operator created per
// communicator with hclRedOpCreatePreMulSum.
inline constexpr int kNumOps = 6;
inline constexpr int kMulSum = 5;
const char* opName(int op);  // "sum" "prod" "max" "min" "avg" "mulsum"

// -1 stands for "all" in both parsers. An unknown name prints nccl-tests'
// "invalid type/op ..., defaulting to ..." line and yields the default.
int parseTypeName(const char* text);
int parseOpName(const char* text);

}  // namespace hcl::perf
