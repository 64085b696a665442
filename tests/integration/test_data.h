// Inputs whose reductions are exact in every data type, and the results the
// numerical contract (docs/numerics.md) predicts for them.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/reduce/float_formats.h"
#include "core/datatype.h"
#include "hcl.h"

namespace hcltest {

inline void storeValue(hclDataType_t t, void* base, size_t i, double v) {
  auto put = [&](auto x) { std::memcpy(static_cast<char*>(base) + i * sizeof(x), &x, sizeof(x)); };
  switch (t) {
    case hclInt8: put(static_cast<int8_t>(v)); break;
    case hclUint8: put(static_cast<uint8_t>(v)); break;
    case hclInt32: put(static_cast<int32_t>(v)); break;
    case hclUint32: put(static_cast<uint32_t>(v)); break;
    case hclInt64: put(static_cast<int64_t>(v)); break;
    case hclUint64: put(static_cast<uint64_t>(v)); break;
    case hclFloat16: put(hcl::floatToHalf(static_cast<float>(v))); break;
    case hclBfloat16: put(hcl::floatToBf16(static_cast<float>(v))); break;
    case hclFloat8e4m3: put(hcl::floatToE4m3(static_cast<float>(v))); break;
    case hclFloat8e5m2: put(hcl::floatToE5m2(static_cast<float>(v))); break;
    case hclFloat32: put(static_cast<float>(v)); break;
    case hclFloat64: put(v); break;
    default: break;
  }
}

// v rounded to the data type, as the reduction will see it.
inline double quantize(hclDataType_t t, double v) {
  switch (t) {
    case hclFloat16: return hcl::halfToFloat(hcl::floatToHalf(static_cast<float>(v)));
    case hclBfloat16: return hcl::bf16ToFloat(hcl::floatToBf16(static_cast<float>(v)));
    case hclFloat8e4m3: return hcl::e4m3ToFloat(hcl::floatToE4m3(static_cast<float>(v)));
    case hclFloat8e5m2: return hcl::e5m2ToFloat(hcl::floatToE5m2(static_cast<float>(v)));
    case hclFloat32: return static_cast<float>(v);
    default: return v;
  }
}

// The value a rank contributes at index i for a reduction with `op`.
inline double inputValue(hclRedOp_t op, int rank, size_t i) {
  switch (op) {
    case hclProd: return static_cast<double>((i + static_cast<size_t>(rank)) % 2 + 1);
    case hclMax:
    case hclMin: return static_cast<double>((static_cast<size_t>(rank) * 7 + i) % 11);
    default: return static_cast<double>((rank + 1) * static_cast<int>(i % 3 + 1));
  }
}

enum class TestOp { Sum, Prod, Max, Min, Avg, PreMulImmediate, PreMulPointer };
inline hclRedOp_t builtinFor(TestOp op) {
  switch (op) {
    case TestOp::Prod: return hclProd;
    case TestOp::Max: return hclMax;
    case TestOp::Min: return hclMin;
    case TestOp::Avg: return hclAvg;
    default: return hclSum;
  }
}

constexpr double kPreMulScalar = 2.0;
// Each rank passes its own scalar, as NCCL allows: the sum is of every
// rank's input times that rank's scalar.
inline double preMulScalarFor(int rank) { return rank % 2 == 0 ? kPreMulScalar : 1.0; }

// The contract's result for element i over nranks ranks.
inline double expectedValue(TestOp op, hclDataType_t t, int nranks, size_t i) {
  const hclRedOp_t base = builtinFor(op);
  if (op == TestOp::PreMulImmediate || op == TestOp::PreMulPointer) {
    double acc = 0;
    for (int r = 0; r < nranks; ++r) acc += quantize(t, inputValue(base, r, i)) * preMulScalarFor(r);
    return acc;
  }
  double acc = quantize(t, inputValue(base, 0, i));
  for (int r = 1; r < nranks; ++r) {
    const double v = quantize(t, inputValue(base, r, i));
    switch (op) {
      case TestOp::Prod: acc *= v; break;
      case TestOp::Max: acc = std::max(acc, v); break;
      case TestOp::Min: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  if (op == TestOp::Avg) {
    if (!hcl::isFloatType(t)) return std::trunc(acc / nranks);
    if (t == hclFloat64) return acc / nranks;
    return static_cast<double>(static_cast<float>(acc) / static_cast<float>(nranks));
  }
  return acc;
}

// Byte patterns for data-movement collectives.
inline uint8_t patternByte(int rank, size_t j) { return static_cast<uint8_t>(rank * 31 + j * 7 + 1); }

}  // namespace hcltest
