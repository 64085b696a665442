// Conversions between fp32 and fp16/bf16/fp8 against the enumeration reference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "collectives/reduce/float_arrays.h"
#include "collectives/reduce/float_formats.h"
#include "collectives/reduce/reduce.h"
#include "reference_formats.h"

namespace hcl {
namespace {

using testref::refEncoder;
using testref::refFormat;
using testref::RefFormat;

const hclDataType_t kNarrowTypes[] = {hclFloat16, hclBfloat16, hclFloat8e4m3, hclFloat8e5m2};

uint32_t allCodes(hclDataType_t t) { return 1u << (8 * dataTypeSize(t)); }

float f32(uint32_t bits) { return std::bit_cast<float>(bits); }
uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }

// The library's scalar conversions, one signature for every format.
float scalarWiden(hclDataType_t t, uint32_t code) {
  switch (t) {
    case hclFloat16: return halfToFloat(uint16_t(code));
    case hclBfloat16: return bf16ToFloat(uint16_t(code));
    case hclFloat8e4m3: return e4m3ToFloat(uint8_t(code));
    default: return e5m2ToFloat(uint8_t(code));
  }
}

uint32_t scalarNarrow(hclDataType_t t, float f) {
  switch (t) {
    case hclFloat16: return floatToHalf(f);
    case hclBfloat16: return floatToBf16(f);
    case hclFloat8e4m3: return floatToE4m3(f);
    default: return floatToE5m2(f);
  }
}

// Packs codes into the narrow type's memory layout and back.
std::vector<uint8_t> packCodes(hclDataType_t t, const std::vector<uint32_t>& codes) {
  const size_t sz = dataTypeSize(t);
  std::vector<uint8_t> out(codes.size() * sz);
  for (size_t i = 0; i < codes.size(); ++i) std::memcpy(&out[i * sz], &codes[i], sz);
  return out;
}

uint32_t codeAt(hclDataType_t t, const uint8_t* p, size_t i) {
  uint32_t c = 0;
  std::memcpy(&c, p + i * dataTypeSize(t), dataTypeSize(t));
  return c;
}

// fp32 inputs that probe rounding: every representable value, every midpoint
// between neighbours, one fp32 ulp either side of it, overflow edges, fp32
// subnormals and random bit patterns.
std::vector<float> probeFloats(hclDataType_t t) {
  const auto& vals = refEncoder(t).positiveValues();
  std::vector<float> out;
  auto addBoth = [&](double v) {
    if (v > std::numeric_limits<float>::max()) return;  // bf16 edges past fp32's range
    const float f = static_cast<float>(v);
    ASSERT_EQ(double(f), v) << "probe not exact in fp32";
    for (float s : {f, -f}) {
      out.push_back(s);
      out.push_back(std::nextafter(s, INFINITY));
      out.push_back(std::nextafter(s, -INFINITY));
    }
  };
  for (size_t i = 0; i < vals.size(); ++i) {
    addBoth(vals[i]);
    if (i + 1 < vals.size()) addBoth((vals[i] + vals[i + 1]) / 2);
  }
  const double maxVal = vals.back(), ulp = maxVal - vals[vals.size() - 2];
  addBoth(maxVal + ulp / 2);
  addBoth(maxVal + ulp);
  addBoth(maxVal * 2);
  for (float f : {INFINITY, -INFINITY, NAN, -NAN, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  -std::numeric_limits<float>::denorm_min(), 1e30f, -1e-30f})
    out.push_back(f);
  std::mt19937 rng(1234);
  for (int i = 0; i < 200000; ++i) out.push_back(f32(uint32_t(rng())));
  // Random values inside the format's range, where rounding is exercised most.
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exps(-30, 20);
  for (int i = 0; i < 200000; ++i)
    out.push_back(static_cast<float>(std::ldexp(unit(rng), exps(rng))));
  return out;
}

class NarrowFormat : public ::testing::TestWithParam<hclDataType_t> {};

TEST_P(NarrowFormat, EveryCodeWidensToItsValue) {
  const hclDataType_t t = GetParam();
  const RefFormat& f = refFormat(t);
  std::vector<uint32_t> codes(allCodes(t));
  for (uint32_t c = 0; c < codes.size(); ++c) codes[c] = c;
  const std::vector<uint8_t> packed = packCodes(t, codes);
  std::vector<float> bulk(codes.size());
  widenToFloat(t, packed.data(), bulk.data(), codes.size());
  for (uint32_t c : codes) {
    const double want = f.decode(c);
    for (float got : {scalarWiden(t, c), bulk[c]}) {
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << dataTypeName(t) << " code " << c;
        ASSERT_EQ(std::signbit(got), bool(c & f.signBit())) << "NaN sign, code " << c;
      } else {
        ASSERT_EQ(double(got), want) << dataTypeName(t) << " code " << c;
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << dataTypeName(t) << " code " << c;
      }
    }
  }
}

TEST_P(NarrowFormat, NarrowingMatchesNearestCodeSearch) {
  const hclDataType_t t = GetParam();
  const RefFormat& f = refFormat(t);
  const std::vector<float> in = probeFloats(t);
  std::vector<uint8_t> bulk(in.size() * dataTypeSize(t));
  narrowFromFloat(t, in.data(), bulk.data(), in.size());
  size_t failures = 0;
  for (size_t i = 0; i < in.size() && failures < 10; ++i) {
    const uint32_t want = refEncoder(t).encode(in[i]);
    for (uint32_t got : {scalarNarrow(t, in[i]), codeAt(t, bulk.data(), i)}) {
      const bool ok = f.isNaN(want) ? f.isNaN(got) : got == want;
      if (!ok) {
        ++failures;
        ADD_FAILURE() << dataTypeName(t) << " of " << std::hexfloat << in[i] << " (bits 0x"
                      << std::hex << bitsOf(in[i]) << "): got 0x" << got << ", want 0x" << want;
      }
    }
  }
}

TEST_P(NarrowFormat, ExhaustiveRoundTripThroughFp32) {
  const hclDataType_t t = GetParam();
  const RefFormat& f = refFormat(t);
  const size_t n = allCodes(t);
  std::vector<uint32_t> codes(n);
  for (uint32_t c = 0; c < n; ++c) codes[c] = c;
  const std::vector<uint8_t> native = packCodes(t, codes);
  std::vector<float> acc(n);
  std::vector<uint8_t> back(native.size());
  ReduceSpec spec;
  spec.type = t;
  convert(acc.data(), Form::Acc, native.data(), Form::Native, n, spec);
  convert(back.data(), Form::Native, acc.data(), Form::Acc, n, spec);
  for (uint32_t c = 0; c < n; ++c) {
    const uint32_t got = codeAt(t, back.data(), c);
    if (f.isNaN(c)) {
      ASSERT_TRUE(f.isNaN(got)) << dataTypeName(t) << " NaN code " << c;
      ASSERT_EQ(got & f.signBit(), c & f.signBit());
    } else {
      ASSERT_EQ(got, c) << dataTypeName(t) << " code " << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllNarrowTypes, NarrowFormat, ::testing::ValuesIn(kNarrowTypes),
                         [](const auto& info) { return std::string(dataTypeName(info.param)); });

TEST(FloatFormats, HalfTiesAndSubnormals) {
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3C00);           // tie, down to even
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);       // tie, up to even
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);                  // half the smallest subnormal
  EXPECT_EQ(floatToHalf(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(3 * 0x1p-25f), 0x0002);              // 1.5 units: tie to 2
  EXPECT_EQ(floatToHalf(-5 * 0x1p-25f), 0x8002);             // 2.5 units: tie to 2
  EXPECT_EQ(floatToHalf(0x1p-14f - 0x1p-25f), 0x0400);       // rounds up into the normals
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);                  // tie past the max: inf
  EXPECT_EQ(floatToHalf(-INFINITY), 0xFC00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x03FF), 0x3FFp-24f);
}

TEST(FloatFormats, Bf16TiesAndSubnormals) {
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(floatToBf16(f32(0x00008000u)), 0x0000);  // subnormal tie to even (down)
  EXPECT_EQ(floatToBf16(f32(0x00018000u)), 0x0002);  // subnormal tie to even (up)
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBf16(f32(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(floatToBf16(NAN) & 0x7FC0, 0x7FC0);
  EXPECT_EQ(floatToBf16(f32(0x7F800001u)) & 0x7FC0, 0x7FC0);  // signalling NaN is quieted
  EXPECT_EQ(bf16ToFloat(0x0001), f32(0x00010000u));
}

TEST(FloatFormats, E4m3SaturatesAndRounds) {
  EXPECT_EQ(floatToE4m3(448.0f), 0x7E);
  EXPECT_EQ(floatToE4m3(464.0f), 0x7E);  // would round to 480, which does not exist
  EXPECT_EQ(floatToE4m3(1e30f), 0x7E);
  EXPECT_EQ(floatToE4m3(-1e30f), 0xFE);
  EXPECT_EQ(floatToE4m3(INFINITY), 0x7E);
  EXPECT_EQ(floatToE4m3(-INFINITY), 0xFE);
  EXPECT_EQ(floatToE4m3(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(floatToE4m3(1.0f + 1.0f / 16), 0x38);  // tie to even
  EXPECT_EQ(floatToE4m3(1.0f + 3.0f / 16), 0x3A);
  EXPECT_EQ(floatToE4m3(0x1p-10f), 0x00);          // half the smallest subnormal
  EXPECT_EQ(floatToE4m3(3 * 0x1p-10f), 0x02);
  EXPECT_EQ(floatToE4m3(-0.0f), 0x80);
  EXPECT_EQ(e4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(e4m3ToFloat(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xFF)));
}

TEST(FloatFormats, E5m2SaturatesFiniteKeepsInf) {
  EXPECT_EQ(floatToE5m2(57344.0f), 0x7B);
  EXPECT_EQ(floatToE5m2(61440.0f), 0x7B);  // tie past the max saturates
  EXPECT_EQ(floatToE5m2(1e30f), 0x7B);
  EXPECT_EQ(floatToE5m2(-1e30f), 0xFB);
  EXPECT_EQ(floatToE5m2(INFINITY), 0x7C);
  EXPECT_EQ(floatToE5m2(-INFINITY), 0xFC);
  EXPECT_TRUE(std::isnan(e5m2ToFloat(floatToE5m2(NAN))));
  EXPECT_EQ(floatToE5m2(1.0f + 0.125f), 0x3C);     // tie to even
  EXPECT_EQ(floatToE5m2(1.0f + 0.375f), 0x3E);
  EXPECT_EQ(floatToE5m2(0x1p-17f), 0x00);
  EXPECT_EQ(floatToE5m2(3 * 0x1p-17f), 0x02);
  EXPECT_EQ(e5m2ToFloat(0x01), 0x1p-16f);
  EXPECT_EQ(e5m2ToFloat(0x7C), INFINITY);
}

TEST(FloatFormats, F16CMatchesSoftwareBitForBit) {
  if (!cpuHasF16C()) GTEST_SKIP() << "CPU has no F16C";
  std::vector<uint16_t> codes(65536);
  for (uint32_t c = 0; c < codes.size(); ++c) codes[c] = uint16_t(c);
  std::vector<float> hw(codes.size()), sw(codes.size());
  halfToFloatF16C(codes.data(), hw.data(), codes.size());
  halfToFloatSoftware(codes.data(), sw.data(), codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    ASSERT_EQ(bitsOf(hw[i]), bitsOf(sw[i])) << "fp16 code " << i;

  std::vector<float> in = probeFloats(hclFloat16);
  std::mt19937 rng(99);
  for (int i = 0; i < 1000000; ++i) in.push_back(f32(uint32_t(rng())));
  for (uint32_t nanBits : {0x7F800001u, 0x7FBFFFFFu, 0xFFC00001u, 0x7FFFE000u})
    in.push_back(f32(nanBits));
  std::vector<uint16_t> hwOut(in.size()), swOut(in.size());
  floatToHalfF16C(in.data(), hwOut.data(), in.size());
  floatToHalfSoftware(in.data(), swOut.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(hwOut[i], swOut[i]) << "fp32 bits 0x" << std::hex << bitsOf(in[i]);
}

}  // namespace
}  // namespace hcl
