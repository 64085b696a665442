// Facts about data types and reduction operators shared by every layer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hcl.h"

namespace hcl {

inline bool isValidDataType(int t) { return t >= 0 && t < hclNumTypes; }

inline size_t dataTypeSize(hclDataType_t t) {
  switch (t) {
    case hclInt8: case hclUint8: case hclFloat8e4m3: case hclFloat8e5m2: return 1;
    case hclFloat16: case hclBfloat16: return 2;
    case hclInt32: case hclUint32: case hclFloat32: return 4;
    case hclInt64: case hclUint64: case hclFloat64: return 8;
    default: return 0;
  }
}

inline bool isFloatType(hclDataType_t t) {
  return t == hclFloat16 || t == hclFloat32 || t == hclFloat64 || t == hclBfloat16 ||
         t == hclFloat8e4m3 || t == hclFloat8e5m2;
}

// 16- and 8-bit floats accumulate in fp32; every other type in itself.
inline size_t accumulatorSize(hclDataType_t t) {
  switch (t) {
    case hclFloat16: case hclBfloat16: case hclFloat8e4m3: case hclFloat8e5m2: return 4;
    default: return dataTypeSize(t);
  }
}

inline const char* dataTypeName(int t) {
  static const char* const names[] = {"int8",    "uint8",   "int32",   "uint32",
                                      "int64",   "uint64",  "float16", "float32",
                                      "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return isValidDataType(t) ? names[t] : "unknown";
}

// The built-in reduction kinds after a user-visible hclRedOp_t is resolved.
enum class ReduceKind : uint8_t { Sum, Prod, Max, Min, Avg, PreMulSum };

inline const char* reduceKindName(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Prod: return "prod";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Avg: return "avg";
    case ReduceKind::PreMulSum: return "premulsum";
  }
  return "unknown";
}

}  // namespace hcl
