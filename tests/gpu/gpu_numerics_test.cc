// The GPU kernels' element code (device/gpu/gpu_numerics.h), compiled for the
// host, against the CPU reference: the narrow float conversions against
// float_formats.h and every type x kind x form combination against
// hcl::reduce / hcl::convert. Needs no GPU.
#include <gtest/gtest.h>

#include "gpu_operands.h"

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/reduce/float_formats.h"
#include "collectives/reduce/reduce.h"
#include "device/gpu/gpu_numerics.h"

namespace hcl::gpu {
namespace {

using gputest::makeOperand;
using gputest::sameResult;

TEST(GpuNumerics, WideningMatchesEveryCode) {
  for (uint32_t c = 0; c < 65536; ++c) {
    ASSERT_EQ(halfToFloatBits(uint16_t(c)), hcl::halfToFloatBits(uint16_t(c))) << "fp16 " << c;
    ASSERT_EQ(bf16ToFloatBits(uint16_t(c)), hcl::bf16ToFloatBits(uint16_t(c))) << "bf16 " << c;
  }
  for (uint32_t c = 0; c < 256; ++c) {
    ASSERT_EQ(e4m3ToFloatBits(uint8_t(c)), hcl::e4m3ToFloatBits(uint8_t(c))) << "e4m3 " << c;
    ASSERT_EQ(e5m2ToFloatBits(uint8_t(c)), hcl::e5m2ToFloatBits(uint8_t(c))) << "e5m2 " << c;
  }
}

void checkNarrowing(uint32_t bits) {
  const float f = std::bit_cast<float>(bits);
  ASSERT_EQ(floatToHalf(f), hcl::floatToHalf(f)) << std::hex << "fp16 of 0x" << bits;
  ASSERT_EQ(floatToBf16(f), hcl::floatToBf16(f)) << std::hex << "bf16 of 0x" << bits;
  ASSERT_EQ(floatToE4m3(f), hcl::floatToE4m3(f)) << std::hex << "e4m3 of 0x" << bits;
  ASSERT_EQ(floatToE5m2(f), hcl::floatToE5m2(f)) << std::hex << "e5m2 of 0x" << bits;
}

TEST(GpuNumerics, NarrowingMatchesAroundEveryRoundingPoint) {
  // Every sign and exponent, with mantissas whose dropped bits sit at and
  // around the halfway point of each format (13, 16, 20, 21 dropped bits, and
  // the longer shifts of subnormal results), plus random ones.
  std::mt19937 rng(7);
  for (uint32_t se = 0; se < 512; ++se) {
    for (uint32_t shift = 1; shift <= 23; ++shift) {
      const uint32_t lowMask = (1u << shift) - 1, half = 1u << (shift - 1);
      for (uint32_t low : {0u, 1u, half - 1, half, half + 1, lowMask}) {
        for (int r = 0; r < 4; ++r) {
          const uint32_t high = r == 0 ? 0u : r == 1 ? ~0u : uint32_t(rng());
          checkNarrowing((se << 23) | (high & 0x7FFFFFu & ~lowMask) | (low & lowMask));
        }
      }
    }
  }
  for (int i = 0; i < 4'000'000; ++i) checkNarrowing(uint32_t(rng()));
}

// ---- reduce / convert against the CPU reference ----

template <class Tr, class Op>
void hostReduce(void* dst, const void* a, const void* b, size_t n, const ElementParams& p) {
  for (size_t i = 0; i < n; ++i) reduceElement<Tr, Op>(dst, a, b, i, p);
}

template <class Tr>
void hostReduceKind(ReduceKind k, void* dst, const void* a, const void* b, size_t n, const ElementParams& p) {
  switch (k) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
    case ReduceKind::PreMulSum: return hostReduce<Tr, OpAdd>(dst, a, b, n, p);
    case ReduceKind::Prod: return hostReduce<Tr, OpMul>(dst, a, b, n, p);
    case ReduceKind::Max: return hostReduce<Tr, OpMax>(dst, a, b, n, p);
    case ReduceKind::Min: return hostReduce<Tr, OpMin>(dst, a, b, n, p);
  }
}

template <class Tr>
void hostConvert(void* dst, const void* src, size_t n, const ElementParams& p) {
  for (size_t i = 0; i < n; ++i) convertElement<Tr>(dst, src, i, p);
}

template <class Fn>
void withTraits(hclDataType_t t, Fn&& fn) {
  switch (t) {
    case hclInt8: return fn.template operator()<DirectType<int8_t>>();
    case hclUint8: return fn.template operator()<DirectType<uint8_t>>();
    case hclInt32: return fn.template operator()<DirectType<int32_t>>();
    case hclUint32: return fn.template operator()<DirectType<uint32_t>>();
    case hclInt64: return fn.template operator()<DirectType<int64_t>>();
    case hclUint64: return fn.template operator()<DirectType<uint64_t>>();
    case hclFloat32: return fn.template operator()<DirectType<float>>();
    case hclFloat64: return fn.template operator()<DirectType<double>>();
    case hclFloat16: return fn.template operator()<HalfType>();
    case hclBfloat16: return fn.template operator()<Bf16Type>();
    case hclFloat8e4m3: return fn.template operator()<E4m3Type>();
    case hclFloat8e5m2: return fn.template operator()<E5m2Type>();
    default: FAIL();
  }
}

ElementParams paramsOf(const ReduceSpec& s, Form d, Form a, Form b) {
  ElementParams p;
  p.scalarFloat = s.scalarFloat;
  p.scalarInt = s.scalarInt;
  p.scalarUint = s.scalarUint;
  p.nranks = s.nranks;
  p.scale = s.kind == ReduceKind::PreMulSum;
  p.divide = s.kind == ReduceKind::Avg;
  p.dstNative = d == Form::Native;
  p.aNative = a == Form::Native;
  p.bNative = b == Form::Native;
  return p;
}



constexpr ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max,
                                 ReduceKind::Min, ReduceKind::Avg,  ReduceKind::PreMulSum};

ReduceSpec specFor(hclDataType_t t, ReduceKind k) {
  ReduceSpec s;
  s.type = t;
  s.kind = k;
  s.scalarFloat = 0.3;
  s.scalarInt = -3;
  s.scalarUint = 5;
  s.nranks = 3;
  return s;
}

TEST(GpuNumerics, ReduceAndConvertMatchCpuReference) {
  std::mt19937_64 rng(11);
  const size_t n = 2049;
  for (int ti = 0; ti < hclNumTypes; ++ti) {
    const auto t = hclDataType_t(ti);
    for (ReduceKind k : kKinds) {
      const ReduceSpec spec = specFor(t, k);
      for (int forms = 0; forms < 8; ++forms) {
        const Form df = forms & 1 ? Form::Acc : Form::Native, af = forms & 2 ? Form::Acc : Form::Native,
                   bf = forms & 4 ? Form::Acc : Form::Native;
        const auto a = makeOperand(t, af, n, rng), b = makeOperand(t, bf, n, rng);
        std::vector<uint8_t> want(n * formElementSize(t, df)), got(want.size());
        hcl::reduce(want.data(), df, a.data(), af, b.data(), bf, n, spec);
        const ElementParams p = paramsOf(spec, df, af, bf);
        withTraits(t, [&]<class Tr>() { hostReduceKind<Tr>(k, got.data(), a.data(), b.data(), n, p); });
        const size_t es = formElementSize(t, df);
        for (size_t i = 0; i < n; ++i)
          ASSERT_TRUE(sameResult(t, df, &want[i * es], &got[i * es]))
              << "reduce " << dataTypeName(t) << " " << reduceKindName(k) << " forms " << forms << " at " << i
              << ": cpu byte " << int(want[i * es]) << " element code byte " << int(got[i * es]) << " (operands "
              << int(a[i * formElementSize(t, af)]) << ", " << int(b[i * formElementSize(t, bf)]) << ", nranks "
              << spec.nranks << ")";
        // convert: src form af, dst form df
        std::vector<uint8_t> cw(n * es), cg(n * es);
        hcl::convert(cw.data(), df, a.data(), af, n, spec);
        const ElementParams cp = paramsOf(spec, df, af, af);
        withTraits(t, [&]<class Tr>() { hostConvert<Tr>(cg.data(), a.data(), n, cp); });
        for (size_t i = 0; i < n; ++i)
          ASSERT_TRUE(sameResult(t, df, &cw[i * es], &cg[i * es]))
              << "convert " << dataTypeName(t) << " " << reduceKindName(k) << " forms " << forms << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace hcl::gpu
