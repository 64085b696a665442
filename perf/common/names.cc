#include "perf/common/names.h"

#include <array>
#include <cstdio>
#include <cstring>

namespace hcl::perf {
namespace {

constexpr std::array kTypes = {hclInt8,    hclUint8,   hclInt32,   hclUint32,   hclInt64,      hclUint64,
                               hclFloat16, hclFloat32, hclFloat64, hclBfloat16, hclFloat8e4m3, hclFloat8e5m2};
constexpr std::array<const char*, kTypes.size()> kTypeNames = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
constexpr std::array<const char*, kNumOps> kOpNames = {"sum", "prod", "max", "min", "avg", "mulsum"};

}  // namespace

std::span<const hclDataType_t> allTypes() { return kTypes; }

const char* typeName(hclDataType_t type) {
  const auto t = static_cast<size_t>(type);
  return t < kTypeNames.size() ? kTypeNames[t] : "unknown";
}

size_t typeSize(hclDataType_t type) {
  switch (type) {
    case hclInt8:
    case hclUint8:
    case hclFloat8e4m3:
    case hclFloat8e5m2: return 1;
    case hclFloat16:
    case hclBfloat16: return 2;
    case hclInt32:
    case hclUint32:
    case hclFloat32: return 4;
    case hclInt64:
    case hclUint64:
    case hclFloat64: return 8;
    default: return 0;
  }
}

TypeFamily typeFamily(hclDataType_t type) {
  switch (type) {
    case hclUint8:
    case hclUint32:
    case hclUint64: return TypeFamily::Unsigned;
    case hclInt8:
    case hclInt32:
    case hclInt64: return TypeFamily::Signed;
    default: return TypeFamily::Float;
  }
}

const char* opName(int op) { return op >= 0 && op < kNumOps ? kOpNames[static_cast<size_t>(op)] : "none"; }

int parseTypeName(const char* text) {
  for (size_t t = 0; t < kTypeNames.size(); ++t) {
    if (std::strcmp(text, kTypeNames[t]) == 0) return static_cast<int>(kTypes[t]);
  }
  if (std::strcmp(text, "all") == 0) return -1;
  std::printf("invalid type %s, defaulting to %s .. \n", text, typeName(hclFloat32));
  return hclFloat32;
}

int parseOpName(const char* text) {
  for (int op = 0; op < kNumOps; ++op) {
    if (std::strcmp(text, kOpNames[static_cast<size_t>(op)]) == 0) return op;
  }
  if (std::strcmp(text, "all") == 0) return -1;
  std::printf("invalid op %s, defaulting to %s .. \n", text, opName(hclSum));
  return hclSum;
}

}  // namespace hcl::perf
