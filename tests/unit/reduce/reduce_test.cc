// reduce() and convert() for every data type, operator, form combination and
// aliasing pattern, against a scalar reference model of the numerical contract
// (docs/numerics.md) written independently of the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "collectives/reduce/float_formats.h"
#include "collectives/reduce/reduce.h"
#include "reference_formats.h"

namespace hcl {
namespace {

using testref::refEncoder;
using testref::refFormat;
using testref::roundToF32;

const hclDataType_t kAllTypes[] = {hclInt8,    hclUint8,      hclInt32,     hclUint32,
                                   hclInt64,   hclUint64,     hclFloat16,   hclFloat32,
                                   hclFloat64, hclBfloat16,   hclFloat8e4m3, hclFloat8e5m2};
const ReduceKind kAllKinds[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max,
                                ReduceKind::Min, ReduceKind::Avg,  ReduceKind::PreMulSum};
const size_t kCounts[] = {0, 1, 7, 1031};
constexpr int kAvgRanks = 3;

bool isAddLike(ReduceKind k) {
  return k == ReduceKind::Sum || k == ReduceKind::Avg || k == ReduceKind::PreMulSum;
}

// ---- Reference models: element values as raw bits <-> reference values. ----

template <class T>
struct IntModel {
  using Val = T;
  static size_t size(Form) { return sizeof(T); }
  static T fromBits(uint64_t v) {  // low bytes: arithmetic modulo 2^width
    T t;
    std::memcpy(&t, &v, sizeof t);
    return t;
  }
  static uint64_t toBits(T t) {
    uint64_t v = 0;
    std::memcpy(&v, &t, sizeof t);
    return v;
  }
  static uint64_t random(Form, std::mt19937_64& rng) {
    // Half small numbers (exercise avg/prod without always wrapping), half anything.
    if (rng() % 2) return toBits(T(int(rng() % 41) - 20));
    return toBits(fromBits(rng()));
  }
  static T load(uint64_t bits, Form f, const ReduceSpec& spec) {
    const T x = fromBits(bits);
    if (f == Form::Native && spec.kind == ReduceKind::PreMulSum) {
      const uint64_t s = std::is_signed_v<T> ? uint64_t(spec.scalarInt) : spec.scalarUint;
      return fromBits(uint64_t(x) * s);
    }
    return x;
  }
  static T combine(T x, T y, ReduceKind k) {
    if (isAddLike(k)) return fromBits(uint64_t(x) + uint64_t(y));
    if (k == ReduceKind::Prod) return fromBits(uint64_t(x) * uint64_t(y));
    if (k == ReduceKind::Max) return x > y ? x : y;
    return x < y ? x : y;
  }
  static uint64_t store(T v, Form f, const ReduceSpec& spec) {
    if (f == Form::Native && spec.kind == ReduceKind::Avg) {
      if constexpr (std::is_signed_v<T>)
        v = T(int64_t(v) / int64_t(spec.nranks));
      else
        v = T(uint64_t(v) / uint64_t(spec.nranks));
    }
    return toBits(v);
  }
  static bool isNaN(uint64_t, Form) { return false; }
  static std::string show(uint64_t bits, Form) {
    return std::to_string(fromBits(bits) + 0);  // + 0 prints int8 as a number
  }
};

double refMax(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == 0 && b == 0) return (std::signbit(a) && std::signbit(b)) ? -0.0 : 0.0;
  return a > b ? a : b;
}
double refMin(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == 0 && b == 0) return (std::signbit(a) || std::signbit(b)) ? -0.0 : 0.0;
  return a < b ? a : b;
}

template <hclDataType_t kType>
struct FloatModel {
  using Val = double;
  static constexpr bool kF64 = kType == hclFloat64;
  static constexpr bool kNarrow = kType != hclFloat32 && kType != hclFloat64;

  static size_t size(Form f) {
    return f == Form::Native ? dataTypeSize(kType) : accumulatorSize(kType);
  }
  static double acc(double x) { return kF64 ? x : roundToF32(x); }
  static bool narrowBits(Form f) { return kNarrow && f == Form::Native; }
  static double decode(uint64_t bits, Form f) {
    if (narrowBits(f)) return refFormat(kType).decode(uint32_t(bits));
    if (kF64) return std::bit_cast<double>(bits);
    return std::bit_cast<float>(uint32_t(bits));
  }
  static uint64_t encodeAcc(double v) {
    if (kF64) return std::bit_cast<uint64_t>(v);
    return std::bit_cast<uint32_t>(static_cast<float>(v));  // v is already an fp32 value
  }
  static uint64_t random(Form f, std::mt19937_64& rng) {
    const unsigned pick = rng() % 100;
    if (narrowBits(f)) {
      const auto& f8 = refFormat(kType);
      if (pick < 8) {  // zeros, infinities (or the max) and NaN, often enough to meet in pairs
        const uint32_t top = f8.ieeeSpecials ? f8.infCode() : f8.maxCode();
        const uint32_t specials[] = {0, f8.signBit(), top, top | f8.signBit(), f8.magnitudeMask()};
        return specials[rng() % std::size(specials)];
      }
      if (pick < 50) return rng() & ((1u << f8.bits()) - 1);  // any code
      // A code near 1.0, so that sums and products round in interesting ways.
      const uint32_t exp = uint32_t(f8.bias - 3 + int(rng() % 6));
      const uint32_t code = (exp << f8.manBits) | uint32_t(rng() & ((1u << f8.manBits) - 1));
      return code | (rng() % 2 ? f8.signBit() : 0u);
    }
    double v;
    if (pick < 8) {
      const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0};
      v = specials[rng() % std::size(specials)];
    } else if (pick < 13) {
      if (kF64) return rng();
      return uint32_t(rng());  // any fp32 bit pattern
    } else {
      std::uniform_real_distribution<double> unit(-1.0, 1.0);
      v = std::ldexp(unit(rng), int(rng() % 24) - 12);
      if (kNarrow && pick < 50)  // the exact value of a narrow code, as fp32
        v = refFormat(kType).decode(refEncoder(kType).encode(v));
    }
    return encodeAcc(acc(v));
  }
  static double load(uint64_t bits, Form f, const ReduceSpec& spec) {
    const double v = decode(bits, f);
    if (f == Form::Native && spec.kind == ReduceKind::PreMulSum)
      return acc(v * acc(spec.scalarFloat));
    return v;
  }
  static double combine(double x, double y, ReduceKind k) {
    if (isAddLike(k)) return acc(x + y);
    if (k == ReduceKind::Prod) return acc(x * y);
    if (k == ReduceKind::Max) return refMax(x, y);
    return refMin(x, y);
  }
  static uint64_t store(double v, Form f, const ReduceSpec& spec) {
    if (f == Form::Acc) return encodeAcc(v);
    if (spec.kind == ReduceKind::Avg) v = acc(v / spec.nranks);
    if (kNarrow) return refEncoder(kType).encode(v);
    return encodeAcc(v);
  }
  static bool isNaN(uint64_t bits, Form f) { return std::isnan(decode(bits, f)); }
  static std::string show(uint64_t bits, Form f) {
    std::ostringstream os;
    os << std::hexfloat << decode(bits, f) << " (0x" << std::hex << bits << ")";
    return os.str();
  }
};

// ---- Raw buffers holding count elements of a given byte size. ----

constexpr uint8_t kCanary = 0xA5;

class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes), words_((bytes + 64 + 7) / 8) {
    std::memset(words_.data(), kCanary, words_.size() * 8);
  }
  void* data() { return words_.data(); }
  void put(size_t elemSize, size_t i, uint64_t bits) {
    std::memcpy(raw() + i * elemSize, &bits, elemSize);
  }
  uint64_t get(size_t elemSize, size_t i) const {
    uint64_t v = 0;
    std::memcpy(&v, raw() + i * elemSize, elemSize);
    return v;
  }
  bool tailIntact() const {
    for (size_t i = bytes_; i < words_.size() * 8; ++i)
      if (raw()[i] != kCanary) return false;
    return true;
  }

 private:
  uint8_t* raw() { return reinterpret_cast<uint8_t*>(words_.data()); }
  const uint8_t* raw() const { return reinterpret_cast<const uint8_t*>(words_.data()); }
  size_t bytes_;
  std::vector<uint64_t> words_;
};

enum class Alias { None, DstIsA, DstIsB, DstIsBoth };

const char* formName(Form f) { return f == Form::Native ? "Native" : "Acc"; }
const char* aliasName(Alias a) {
  switch (a) {
    case Alias::None: return "none";
    case Alias::DstIsA: return "dst==a";
    case Alias::DstIsB: return "dst==b";
    default: return "dst==a==b";
  }
}

ReduceSpec specFor(hclDataType_t t, ReduceKind k) {
  ReduceSpec s;
  s.type = t;
  s.kind = k;
  s.nranks = kAvgRanks;
  switch (t) {
    case hclFloat32: s.scalarFloat = double(1.1f); break;
    case hclFloat64: s.scalarFloat = 1.1; break;
    default: s.scalarFloat = -0.375; break;  // exact in every narrow format
  }
  s.scalarInt = -3;
  s.scalarUint = 251;
  return s;
}

template <class M>
void expectElements(const Buffer& got, size_t elemSize, Form form,
                    const std::vector<uint64_t>& want, const std::string& what) {
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 5; ++i) {
    const uint64_t g = got.get(elemSize, i);
    const bool ok = M::isNaN(want[i], form) ? M::isNaN(g, form) : g == want[i];
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " element " << i << ": got " << M::show(g, form) << ", want "
                    << M::show(want[i], form);
    }
  }
  EXPECT_TRUE(got.tailIntact()) << what << ": wrote past the end";
}

template <class M>
void checkReduce(const ReduceSpec& spec, Form af, Form bf, Form df, size_t count, Alias alias,
                 std::mt19937_64& rng) {
  std::ostringstream what;
  what << dataTypeName(spec.type) << " " << reduceKindName(spec.kind) << " " << formName(af)
       << "+" << formName(bf) << "->" << formName(df) << " count " << count << " "
       << aliasName(alias);
  const size_t sa = M::size(af), sb = M::size(bf), sd = M::size(df);
  std::vector<uint64_t> aBits(count), bBits(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    aBits[i] = M::random(af, rng);
    bBits[i] = alias == Alias::DstIsBoth ? aBits[i] : M::random(bf, rng);
    const auto r = M::combine(M::load(aBits[i], af, spec), M::load(bBits[i], bf, spec), spec.kind);
    want[i] = M::store(r, df, spec);
  }
  Buffer a(count * sa), b(count * sb), d(count * std::max({sa, sb, sd}));
  for (size_t i = 0; i < count; ++i) {
    a.put(sa, i, aBits[i]);
    b.put(sb, i, bBits[i]);
    if (alias == Alias::DstIsA || alias == Alias::DstIsBoth) d.put(sa, i, aBits[i]);
    if (alias == Alias::DstIsB) d.put(sb, i, bBits[i]);
  }
  const void* ap = (alias == Alias::DstIsA || alias == Alias::DstIsBoth) ? d.data() : a.data();
  const void* bp = alias == Alias::DstIsB ? d.data() : alias == Alias::DstIsBoth ? ap : b.data();
  reduce(d.data(), df, ap, af, bp, bf, count, spec);
  expectElements<M>(d, sd, df, want, what.str());
  if (alias == Alias::None) {  // inputs untouched
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(a.get(sa, i), aBits[i]) << what.str() << ": input a modified";
      ASSERT_EQ(b.get(sb, i), bBits[i]) << what.str() << ": input b modified";
    }
  }
}

template <class M>
void checkConvert(const ReduceSpec& spec, Form sf, Form df, size_t count, bool inPlace,
                  std::mt19937_64& rng) {
  std::ostringstream what;
  what << "convert " << dataTypeName(spec.type) << " " << reduceKindName(spec.kind) << " "
       << formName(sf) << "->" << formName(df) << " count " << count
       << (inPlace ? " in place" : "");
  const size_t ss = M::size(sf), sd = M::size(df);
  std::vector<uint64_t> src(count), want(count);
  for (size_t i = 0; i < count; ++i) {
    src[i] = M::random(sf, rng);
    const auto v = M::load(src[i], sf, spec);
    want[i] = df == Form::Acc && sf == Form::Acc ? src[i] : M::store(v, df, spec);
  }
  Buffer s(count * ss), d(count * std::max(ss, sd));
  for (size_t i = 0; i < count; ++i) (inPlace ? d : s).put(ss, i, src[i]);
  convert(d.data(), df, inPlace ? d.data() : s.data(), sf, count, spec);
  expectElements<M>(d, sd, df, want, what.str());
}

// Calls fn.template operator()<Model>() for the model of type t.
template <class Fn>
void withModel(hclDataType_t t, Fn&& fn) {
  switch (t) {
    case hclInt8: return fn.template operator()<IntModel<int8_t>>();
    case hclUint8: return fn.template operator()<IntModel<uint8_t>>();
    case hclInt32: return fn.template operator()<IntModel<int32_t>>();
    case hclUint32: return fn.template operator()<IntModel<uint32_t>>();
    case hclInt64: return fn.template operator()<IntModel<int64_t>>();
    case hclUint64: return fn.template operator()<IntModel<uint64_t>>();
    case hclFloat16: return fn.template operator()<FloatModel<hclFloat16>>();
    case hclFloat32: return fn.template operator()<FloatModel<hclFloat32>>();
    case hclFloat64: return fn.template operator()<FloatModel<hclFloat64>>();
    case hclBfloat16: return fn.template operator()<FloatModel<hclBfloat16>>();
    case hclFloat8e4m3: return fn.template operator()<FloatModel<hclFloat8e4m3>>();
    default: return fn.template operator()<FloatModel<hclFloat8e5m2>>();
  }
}

class ReduceAgainstReference
    : public ::testing::TestWithParam<std::tuple<hclDataType_t, ReduceKind>> {};

TEST_P(ReduceAgainstReference, AllFormsCountsAndAliasing) {
  const auto [type, kind] = GetParam();
  const ReduceSpec spec = specFor(type, kind);
  std::mt19937_64 rng(uint64_t(type) * 100 + uint64_t(kind));
  withModel(type, [&]<class M>() {
    for (Form af : {Form::Native, Form::Acc})
      for (Form bf : {Form::Native, Form::Acc})
        for (Form df : {Form::Native, Form::Acc})
          for (size_t count : kCounts)
            for (Alias alias : {Alias::None, Alias::DstIsA, Alias::DstIsB, Alias::DstIsBoth}) {
              if (alias == Alias::DstIsBoth && af != bf) continue;
              checkReduce<M>(spec, af, bf, df, count, alias, rng);
            }
  });
}

TEST_P(ReduceAgainstReference, ConvertAllForms) {
  const auto [type, kind] = GetParam();
  const ReduceSpec spec = specFor(type, kind);
  std::mt19937_64 rng(uint64_t(type) * 100 + uint64_t(kind) + 7);
  withModel(type, [&]<class M>() {
    for (Form sf : {Form::Native, Form::Acc})
      for (Form df : {Form::Native, Form::Acc})
        for (size_t count : kCounts)
          for (bool inPlace : {false, true}) checkConvert<M>(spec, sf, df, count, inPlace, rng);
  });
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesAndOps, ReduceAgainstReference,
    ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::ValuesIn(kAllKinds)),
    [](const auto& info) {
      return std::string(dataTypeName(std::get<0>(info.param))) + "_" +
             reduceKindName(std::get<1>(info.param));
    });

// ---- Hand-written cases from the contract. ----

template <class T>
std::vector<T> reduceNative(hclDataType_t t, ReduceKind k, const std::vector<T>& a,
                            const std::vector<T>& b, ReduceSpec spec = {}) {
  spec.type = t;
  spec.kind = k;
  std::vector<T> out(a.size());
  reduce(out.data(), Form::Native, a.data(), Form::Native, b.data(), Form::Native, a.size(), spec);
  return out;
}

TEST(ReduceIntegers, AvgTruncatesTheWrappedSumTowardZero) {
  ReduceSpec spec;
  spec.nranks = 2;
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(reduceNative<int32_t>(hclInt32, ReduceKind::Avg, {-3, 3, -5, 7, kMax, -7},
                                  {0, 0, 0, 0, 1, 0}, spec),
            (std::vector<int32_t>{-1, 1, -2, 3, std::numeric_limits<int32_t>::min() / 2, -3}));
  EXPECT_EQ(reduceNative<uint8_t>(hclUint8, ReduceKind::Avg, {255, 3}, {3, 0}, spec),
            (std::vector<uint8_t>{1, 1}));  // 258 wraps to 2
  EXPECT_EQ(reduceNative<int8_t>(hclInt8, ReduceKind::Avg, {127, -128}, {1, -1}, spec),
            (std::vector<int8_t>{-64, 63}));
}

// Avg of types up to 32 bits divides in fp64 (reduce_ops.h): check it against
// integer division at the edges of each type and for divisors from 1 to 2^31-1.
template <class T>
void expectAvgMatchesIntegerDivision(hclDataType_t t) {
  std::vector<T> values{std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0), T(1), T(-1),
                        T(std::numeric_limits<T>::max() - 1), T(std::numeric_limits<T>::min() + 1)};
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) values.push_back(static_cast<T>(rng()));
  const std::vector<T> zeros(values.size(), T(0));
  for (int n : {1, 2, 3, 5, 7, 10, 64, 127, 255, 1000, 65535, 1 << 24, (1 << 24) + 1, 2147483646, 2147483647}) {
    ReduceSpec spec;
    spec.nranks = n;
    const std::vector<T> got = reduceNative<T>(t, ReduceKind::Avg, values, zeros, spec);
    for (size_t i = 0; i < values.size(); ++i) {
      const T want = static_cast<T>(static_cast<int64_t>(values[i]) / n);
      ASSERT_EQ(got[i], want) << dataTypeName(t) << " " << +values[i] << " / " << n;
    }
  }
}

TEST(ReduceIntegers, AvgEqualsIntegerDivisionForEveryWidthUpTo32Bits) {
  expectAvgMatchesIntegerDivision<int8_t>(hclInt8);
  expectAvgMatchesIntegerDivision<uint8_t>(hclUint8);
  expectAvgMatchesIntegerDivision<int32_t>(hclInt32);
  expectAvgMatchesIntegerDivision<uint32_t>(hclUint32);
}

TEST(ReduceIntegers, AvgOverManyRanksWithAccPartials) {
  // 4 ranks: ((r0 + r1) + r2) + r3, the last step finalizing into Native.
  ReduceSpec spec;
  spec.type = hclInt64;
  spec.kind = ReduceKind::Avg;
  spec.nranks = 4;
  const std::vector<int64_t> r0{-10, 9}, r1{3, 1}, r2{-1, 1}, r3{0, 0};
  std::vector<int64_t> acc(2), out(2);
  reduce(acc.data(), Form::Acc, r0.data(), Form::Native, r1.data(), Form::Native, 2, spec);
  reduce(acc.data(), Form::Acc, acc.data(), Form::Acc, r2.data(), Form::Native, 2, spec);
  reduce(out.data(), Form::Native, acc.data(), Form::Acc, r3.data(), Form::Native, 2, spec);
  EXPECT_EQ(out, (std::vector<int64_t>{-2, 2}));  // -8/4, 11/4
}

TEST(ReduceIntegers, SumAndProdWrap) {
  EXPECT_EQ(reduceNative<int8_t>(hclInt8, ReduceKind::Sum, {127, -128, -100}, {1, -1, -100}),
            (std::vector<int8_t>{-128, 127, 56}));
  EXPECT_EQ(reduceNative<uint8_t>(hclUint8, ReduceKind::Sum, {200, 255}, {100, 1}),
            (std::vector<uint8_t>{44, 0}));
  EXPECT_EQ(reduceNative<int8_t>(hclInt8, ReduceKind::Prod, {16, -128}, {16, -1}),
            (std::vector<int8_t>{0, -128}));
  EXPECT_EQ(reduceNative<uint8_t>(hclUint8, ReduceKind::Prod, {255}, {255}),
            (std::vector<uint8_t>{1}));
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(reduceNative<int64_t>(hclInt64, ReduceKind::Sum, {kMin}, {-1}),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(reduceNative<uint32_t>(hclUint32, ReduceKind::Prod, {0x10000u}, {0x10001u}),
            (std::vector<uint32_t>{0x10000u}));
}

TEST(ReducePreMulSum, IntegerScalarsWrap) {
  ReduceSpec spec;
  spec.scalarInt = -2;
  EXPECT_EQ(reduceNative<int32_t>(hclInt32, ReduceKind::PreMulSum,
                                  {std::numeric_limits<int32_t>::max(), 5}, {0, 1}, spec),
            (std::vector<int32_t>{2, -12}));
  spec.scalarInt = 1000;  // wraps to -24 in int8
  EXPECT_EQ(reduceNative<int8_t>(hclInt8, ReduceKind::PreMulSum, {1, 2}, {0, 1}, spec),
            (std::vector<int8_t>{-24, -72}));
  spec.scalarUint = 0xFFFFFFFFu;  // -1 modulo 2^32
  EXPECT_EQ(reduceNative<uint32_t>(hclUint32, ReduceKind::PreMulSum, {5, 0}, {0, 7}, spec),
            (std::vector<uint32_t>{0xFFFFFFFBu, 0xFFFFFFF9u}));
  spec.scalarUint = 3;
  EXPECT_EQ(reduceNative<uint64_t>(hclUint64, ReduceKind::PreMulSum, {~0ull}, {0}, spec),
            (std::vector<uint64_t>{~0ull - 2}));
}

TEST(ReducePreMulSum, FloatScalars) {
  ReduceSpec spec;
  spec.scalarFloat = 0.5;
  // fp16 1, 3 and 2, 5: 0.5 + 1 = 1.5, 1.5 + 2.5 = 4.
  EXPECT_EQ(reduceNative<uint16_t>(hclFloat16, ReduceKind::PreMulSum, {0x3C00, 0x4200},
                                   {0x4000, 0x4500}, spec),
            (std::vector<uint16_t>{0x3E00, 0x4400}));
  spec.scalarFloat = 3.0;
  EXPECT_EQ(reduceNative<float>(hclFloat32, ReduceKind::PreMulSum, {1.5f, -2.0f}, {0.25f, 1.0f},
                                spec),
            (std::vector<float>{5.25f, -3.0f}));
  // bf16 (1 + 2^-7) * 3 twice: the fp32 sum 6 + 6*2^-7 is a bf16 tie, rounded
  // once at the end, to even (6.0625).
  EXPECT_EQ(reduceNative<uint16_t>(hclBfloat16, ReduceKind::PreMulSum, {0x3F81}, {0x3F81}, spec),
            (std::vector<uint16_t>{0x40C2}));
}

TEST(ReduceFloats, NaNAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  const auto mx = reduceNative<float>(hclFloat32, ReduceKind::Max, {nan, 1, -inf, 0.0f, -0.0f},
                                      {1, nan, 2, -0.0f, 0.0f});
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[2], 2.0f);
  EXPECT_FALSE(std::signbit(mx[3]));  // max(+0, -0) = +0 in either order
  EXPECT_FALSE(std::signbit(mx[4]));
  const auto mn = reduceNative<double>(hclFloat64, ReduceKind::Min, {NAN, 1, -0.0, 0.0, inf},
                                       {1, NAN, 0.0, -0.0, 5});
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_TRUE(std::isnan(mn[1]));
  EXPECT_TRUE(std::signbit(mn[2]));  // min(+0, -0) = -0 in either order
  EXPECT_TRUE(std::signbit(mn[3]));
  EXPECT_EQ(mn[4], 5.0);
  const auto sum = reduceNative<float>(hclFloat32, ReduceKind::Sum, {inf, inf, nan}, {-inf, 1, 1});
  EXPECT_TRUE(std::isnan(sum[0]));
  EXPECT_EQ(sum[1], inf);
  EXPECT_TRUE(std::isnan(sum[2]));
}

TEST(ReduceFloats, NarrowNaNPropagationAndOverflow) {
  // fp16: max/min with NaN, overflow of a sum to inf.
  const auto mx = reduceNative<uint16_t>(hclFloat16, ReduceKind::Max, {0x7E00, 0x3C00, 0x7BFF},
                                         {0x3C00, 0xFE00, 0x7BFF});
  EXPECT_EQ(mx[0] & 0x7E00, 0x7E00);
  EXPECT_EQ(mx[1] & 0x7E00, 0x7E00);
  EXPECT_EQ(mx[2], 0x7BFF);
  EXPECT_EQ(reduceNative<uint16_t>(hclFloat16, ReduceKind::Sum, {0x7BFF}, {0x7BFF}),
            (std::vector<uint16_t>{0x7C00}));
  // e4m3: NaN propagates through min, sums saturate at 448.
  EXPECT_EQ(reduceNative<uint8_t>(hclFloat8e4m3, ReduceKind::Min, {0x7F, 0x01}, {0x01, 0xFF}),
            (std::vector<uint8_t>{0x7F, 0xFF}));
  EXPECT_EQ(reduceNative<uint8_t>(hclFloat8e4m3, ReduceKind::Sum, {0x7E, 0xFE}, {0x7E, 0xFE}),
            (std::vector<uint8_t>{0x7E, 0xFE}));
  // e5m2: finite sums saturate at 57344, inf stays inf, inf - inf is NaN.
  const auto e5 = reduceNative<uint8_t>(hclFloat8e5m2, ReduceKind::Sum, {0x7B, 0x7C, 0x7C},
                                        {0x7B, 0x3C, 0xFC});
  EXPECT_EQ(e5[0], 0x7B);
  EXPECT_EQ(e5[1], 0x7C);
  EXPECT_TRUE(std::isnan(testref::kRefE5m2.decode(e5[2])));
}

// fp32 values whose rounding to fp16 and bf16 is easy to get wrong, repeated
// past any vector width so that every position of a vector meets each one:
// NaNs whose payload sits only in the low bits (plain rounding would make
// them infinities or flip their sign), ties, the largest finite values,
// subnormals and signed zeros. Each must come out with the scalar
// conversion's exact bits.
std::vector<float> roundingEdgeValues() {
  const uint32_t bits[] = {0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FC00000u, 0x7FBF8001u,
                           0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F808000u, 0x3F818000u,
                           0x3F808001u, 0x477FF000u, 0x477FEFFFu, 0x33800000u, 0x33000001u, 0x00000001u,
                           0x80000000u, 0x00000000u, 0x387FC000u, 0x38800000u, 0xC0490FDBu};
  std::vector<float> v;
  for (int rep = 0; rep < 5; ++rep)
    for (size_t i = 0; i < std::size(bits); ++i) v.push_back(std::bit_cast<float>(bits[(i + rep) % std::size(bits)]));
  return v;
}

// fp8 values around each format's rounding edges: ties at the subnormal step,
// the smallest normal, saturation (e4m3 448/464/480, e5m2 57344/61440).
std::vector<float> fp8EdgeValues() {
  const uint32_t bits[] = {0x3B000000u, 0x3A800000u, 0x3A800001u, 0x3B400000u, 0x3C800000u, 0x3C7FFFFFu,
                           0x43E00000u, 0x43E7FFFFu, 0x43E80000u, 0x43F00000u, 0x47600000u, 0x476FFFFFu,
                           0x47700000u, 0x37800000u, 0x37000000u, 0x37000001u, 0x37C00000u, 0x387FFFFFu,
                           0xBB400000u, 0xC7700000u, 0x3F880000u, 0x3F980000u, 0x3F900000u, 0x3FA00000u};
  std::vector<float> v;
  for (int rep = 0; rep < 3; ++rep)
    for (size_t i = 0; i < std::size(bits); ++i) v.push_back(std::bit_cast<float>(bits[(i + rep) % std::size(bits)]));
  return v;
}

uint32_t scalarRounding(hclDataType_t t, float f) {
  switch (t) {
    case hclFloat16: return floatToHalf(f);
    case hclBfloat16: return floatToBf16(f);
    case hclFloat8e4m3: return floatToE4m3(f);
    default: return floatToE5m2(f);
  }
}

TEST(ReduceFloats, NarrowRoundingMatchesTheScalarConversionsBitForBit) {
  std::vector<float> acc = roundingEdgeValues();
  const std::vector<float> fp8 = fp8EdgeValues();
  acc.insert(acc.end(), fp8.begin(), fp8.end());
  const std::vector<float> zeros(acc.size(), 0.0f);
  for (hclDataType_t t : {hclFloat16, hclBfloat16, hclFloat8e4m3, hclFloat8e5m2}) {
    SCOPED_TRACE(dataTypeName(t));
    ReduceSpec spec;
    spec.type = t;
    const size_t es = dataTypeSize(t);
    std::vector<uint8_t> converted(acc.size() * es), summed(acc.size() * es);
    convert(converted.data(), Form::Native, acc.data(), Form::Acc, acc.size(), spec);
    // + 0 keeps every value but -0 (which becomes +0); the NaN bits pass through the adder unchanged.
    reduce(summed.data(), Form::Native, acc.data(), Form::Acc, zeros.data(), Form::Acc, acc.size(), spec);
    for (size_t i = 0; i < acc.size(); ++i) {
      uint32_t got = 0, gotSum = 0;
      std::memcpy(&got, converted.data() + i * es, es);
      std::memcpy(&gotSum, summed.data() + i * es, es);
      EXPECT_EQ(got, scalarRounding(t, acc[i])) << "element " << i << ", fp32 0x" << std::hex
                                                 << std::bit_cast<uint32_t>(acc[i]);
      EXPECT_EQ(gotSum, scalarRounding(t, acc[i] + 0.0f))
          << "element " << i << ", fp32 0x" << std::hex << std::bit_cast<uint32_t>(acc[i]);
    }
  }
}

// Every fp8 code widens to the fp32 bits of the scalar table, NaN payloads
// and signs included, through convert() and through reduce() with -0 (the
// one value whose sum with every code keeps its bits, NaNs aside).
TEST(ReduceFloats, Fp8WideningMatchesTheScalarTablesForEveryCode) {
  std::vector<uint8_t> codes(256 * 3);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i);
  const std::vector<float> negZeros(codes.size(), -0.0f);
  for (hclDataType_t t : {hclFloat8e4m3, hclFloat8e5m2}) {
    SCOPED_TRACE(dataTypeName(t));
    const auto& table = t == hclFloat8e4m3 ? kE4m3ToFloatBits : kE5m2ToFloatBits;
    ReduceSpec spec;
    spec.type = t;
    std::vector<float> widened(codes.size()), summed(codes.size());
    convert(widened.data(), Form::Acc, codes.data(), Form::Native, codes.size(), spec);
    reduce(summed.data(), Form::Acc, codes.data(), Form::Native, negZeros.data(), Form::Acc, codes.size(), spec);
    for (size_t i = 0; i < codes.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(widened[i]), table[codes[i]]) << "code 0x" << std::hex << int(codes[i]);
      EXPECT_EQ(std::bit_cast<uint32_t>(summed[i]), table[codes[i]]) << "code 0x" << std::hex << int(codes[i]);
    }
  }
}

// reduceTwice against reduce(): every operator, counts around the vector
// widths, destinations at misalignments of a 64-byte line (equal ones, so
// that two streamed destinations share a head, and different ones, so that
// they cannot always be aligned together), each streamed or not, and in
// place (a destination is an operand). fp16, bf16 and float32 run the one-pass kernels where this
// build has them; the other types the reduce-then-copy path.
TEST(ReduceTwice, StoresWhatReduceStoresIntoBoth) {
  for (hclDataType_t t : {hclInt32, hclFloat64, hclFloat8e4m3, hclFloat8e5m2})
    EXPECT_FALSE(reducesTwice(t)) << dataTypeName(t);
  for (hclDataType_t t : {hclBfloat16, hclFloat32}) EXPECT_EQ(reducesTwice(t), reducesTwice(hclFloat16));
  std::mt19937_64 rng(11);
  for (hclDataType_t t : {hclFloat16, hclBfloat16, hclFloat8e4m3, hclFloat8e5m2, hclFloat32, hclInt8}) {
    const size_t es = dataTypeSize(t);
    // Which NaN an operation on two NaNs returns is not part of the contract;
    // with one NaN operand every bit must match.
    const auto isNaN = [&](const uint8_t* p) {
      uint32_t v = 0;
      std::memcpy(&v, p, std::min<size_t>(es, 4));
      if (t == hclFloat32) return (v & 0x7F800000) == 0x7F800000 && (v & 0x7FFFFF) != 0;
      if (t == hclFloat16) return (v & 0x7C00) == 0x7C00 && (v & 0x3FF) != 0;
      if (t == hclBfloat16) return (v & 0x7F80) == 0x7F80 && (v & 0x7F) != 0;
      if (t == hclFloat8e4m3) return (v & 0x7F) == 0x7F;
      if (t == hclFloat8e5m2) return (v & 0x7F) > 0x7C;
      return false;  // the other types take reduce() itself: every bit must match
    };
    for (ReduceKind k : kAllKinds) {
      const ReduceSpec spec = specFor(t, k);
      for (size_t count : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(100), size_t(1031)}) {
        for (size_t shift1 : {0, 2, 6, 30}) {
          for (size_t shift2 : {0, 2, 6, 34}) {
            for (int streams = 0; streams < 4; ++streams) {
              for (int alias = 0; alias < 4; ++alias) {  // none, dst is b, dst2 is b, dst is a
                std::ostringstream what;
                what << dataTypeName(t) << " " << reduceKindName(k) << " count " << count << " shifts " << shift1
                     << "/" << shift2 << " streams " << streams << " alias " << alias;
                const size_t bytes = count * es;
                std::vector<uint8_t> a(bytes), b(bytes), want(bytes);
                for (auto& v : a) v = static_cast<uint8_t>(rng());
                for (auto& v : b) v = static_cast<uint8_t>(rng());
                reduce(want.data(), Form::Native, a.data(), Form::Native, b.data(), Form::Native, count, spec);
                Buffer d1(bytes + 128), d2(bytes + 128);
                const auto at = [](Buffer& d, size_t shift) {
                  const auto line = (reinterpret_cast<uintptr_t>(d.data()) + 63) / 64 * 64;
                  return reinterpret_cast<uint8_t*>(line + shift);
                };
                // Shifts keep each type's alignment.
                uint8_t* const p1 = at(d1, shift1 / es * es);
                uint8_t* const p2 = at(d2, shift2 / es * es);
                const uint8_t* ap = a.data();
                const uint8_t* bp = b.data();
                if (alias == 1) bp = std::copy(b.begin(), b.end(), p1) - bytes;
                if (alias == 2) bp = std::copy(b.begin(), b.end(), p2) - bytes;
                if (alias == 3) ap = std::copy(a.begin(), a.end(), p1) - bytes;
                reduceTwice(p1, p2, ap, bp, count, spec, streams & 1, streams & 2);
                for (size_t i = 0; i < count; ++i) {
                  const uint8_t* w = want.data() + i * es;
                  const bool bothNaN = isNaN(a.data() + i * es) && isNaN(b.data() + i * es);
                  for (const uint8_t* got : {p1 + i * es, p2 + i * es}) {
                    if (bothNaN ? !isNaN(got) : std::memcmp(got, w, es) != 0)
                      ADD_FAILURE() << what.str() << ": element " << i << " differs from reduce()'s";
                  }
                }
                // Nothing stored before either destination or in the 32 bytes after it.
                for (const auto& [d, p] : {std::pair{&d1, p1}, std::pair{&d2, p2}}) {
                  for (const uint8_t* q = at(*d, 0); q < p; ++q) ASSERT_EQ(*q, kCanary) << what.str() << ": before";
                  for (size_t i = 0; i < 32; ++i) ASSERT_EQ(p[bytes + i], kCanary) << what.str() << ": after";
                }
                if (::testing::Test::HasFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

TEST(ReduceFloats, AvgDividesInTheAccumulator) {
  // fp16 avg of 1, 2, 2 over 3 ranks, with an Acc partial: 5/3 rounded once to fp16.
  ReduceSpec spec;
  spec.type = hclFloat16;
  spec.kind = ReduceKind::Avg;
  spec.nranks = 3;
  const std::vector<uint16_t> r0{0x3C00}, r1{0x4000}, r2{0x4000};
  std::vector<float> acc(1);
  std::vector<uint16_t> out(1);
  reduce(acc.data(), Form::Acc, r0.data(), Form::Native, r1.data(), Form::Native, 1, spec);
  EXPECT_EQ(acc[0], 3.0f);  // Acc holds the sum, not yet divided
  reduce(out.data(), Form::Native, r2.data(), Form::Native, acc.data(), Form::Acc, 1, spec);
  EXPECT_EQ(out[0], testref::refEncoder(hclFloat16).encode(double(5.0f / 3.0f)));
  EXPECT_EQ(out[0], 0x3EAB);
}

}  // namespace
}  // namespace hcl
