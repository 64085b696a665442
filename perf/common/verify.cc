#include "perf/common/verify.h"

#include "perf/common/float_codec.h"
#include "perf/common/names.h"

namespace hcl::perf {
namespace {

uint64_t mix(uint64_t seed, uint64_t who, uint64_t index) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (who + 1) * 0xc2b2ae3d27d4eb4full ^ index * 0x165667b19e3779f9ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int64_t inputValue(TypeFamily family, int op, int rank, size_t index, uint64_t seed) {
  const uint64_t h = mix(seed, static_cast<uint64_t>(rank), index);
  const bool signedValues = family != TypeFamily::Unsigned;
  switch (op) {
    case hclProd: {
      int64_t v = (rank < 3 && (h & 1)) ? 2 : 1;
      return (signedValues && (h & 2)) ? -v : v;
    }
    case hclMax:
    case hclMin: return signedValues ? static_cast<int64_t>(h % 9) - 4 : static_cast<int64_t>(h % 9);
    default: return signedValues ? static_cast<int64_t>(h % 4) - 1 : static_cast<int64_t>(h % 4);
  }
}

int64_t mulSumScalar(int rank) { return 1 + (rank & 1); }

uint64_t encodeExact(hclDataType_t type, int64_t v) {
  return isFloat(type) ? encodeFloat(type, static_cast<double>(v)) : encodeInteger(type, v);
}

// The exact reduction of every rank's input (an integer: all inputs are).
int64_t reduceExact(TypeFamily family, int op, int nranks, size_t index, uint64_t seed) {
  int64_t acc = inputValue(family, op, 0, index, seed) * (op == kMulSum ? mulSumScalar(0) : 1);
  for (int r = 1; r < nranks; ++r) {
    const int64_t v = inputValue(family, op, r, index, seed);
    switch (op) {
      case hclProd: acc *= v; break;
      case hclMax: acc = v > acc ? v : acc; break;
      case hclMin: acc = v < acc ? v : acc; break;
      case kMulSum: acc += v * mulSumScalar(r); break;
      default: acc += v; break;
    }
  }
  return acc;
}

// The stored result of Avg: the sum (wrapped for integers) divided by nranks
// in the accumulator type, then rounded to the data type.
uint64_t averageBits(hclDataType_t type, int64_t sum, int nranks) {
  switch (typeFamily(type)) {
    case TypeFamily::Unsigned:
      return encodeInteger(type, static_cast<int64_t>(encodeInteger(type, sum) / static_cast<uint64_t>(nranks)));
    case TypeFamily::Signed: return encodeInteger(type, decodeInteger(type, encodeInteger(type, sum)) / nranks);
    case TypeFamily::Float: break;
  }
  if (type == hclFloat64) return encodeFloat(type, static_cast<double>(sum) / nranks);
  const float quotient = static_cast<float>(sum) / static_cast<float>(nranks);
  return encodeFloat(type, static_cast<double>(quotient));
}

}  // namespace

void fillReductionInput(void* dst, size_t count, size_t offset, hclDataType_t type, int op, int rank, uint64_t seed) {
  const size_t size = typeSize(type);
  const TypeFamily family = typeFamily(type);
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    storeBits(out + i * size, encodeExact(type, inputValue(family, op, rank, offset + i, seed)), size);
  }
}

void fillReductionExpected(void* dst, size_t count, size_t offset, hclDataType_t type, int op, int nranks,
                           uint64_t seed) {
  const size_t size = typeSize(type);
  const TypeFamily family = typeFamily(type);
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    const int64_t exact = reduceExact(family, op, nranks, offset + i, seed);
    const uint64_t bits = op == hclAvg ? averageBits(type, exact, nranks) : encodeExact(type, exact);
    storeBits(out + i * size, bits, size);
  }
}

void fillPattern(void* dst, size_t count, size_t offset, hclDataType_t type, int owner, uint64_t seed) {
  const size_t size = typeSize(type);
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    storeBits(out + i * size, mix(seed ^ 0x5bd1e9955bd1e995ull, static_cast<uint64_t>(owner), offset + i), size);
  }
}

uint64_t mulSumScalarBits(hclDataType_t type, int rank) { return encodeExact(type, mulSumScalar(rank)); }

int64_t countMismatches(const void* actual, const void* expected, size_t count, hclDataType_t type, int op) {
  const size_t size = typeSize(type);
  const bool tolerant = op == hclAvg && isFloat(type);
  const auto* a = static_cast<const unsigned char*>(actual);
  const auto* e = static_cast<const unsigned char*>(expected);
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t got = loadBits(a + i * size, size);
    const uint64_t want = loadBits(e + i * size, size);
    if (got == want) continue;
    if (tolerant && ulpDistance(type, got, want) <= 2) continue;
    ++wrong;
  }
  return wrong;
}

void corruptFirstElement(void* p, hclDataType_t type) {
  // Bit 6 of the top byte is an exponent bit of every float type and a high
  // bit of every integer type: the value moves far beyond any tolerance.
  static_cast<unsigned char*>(p)[typeSize(type) - 1] ^= 0x40;
}

}  // namespace hcl::perf
