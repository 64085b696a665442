// The claims of numerics.md about the AVX-512 extensions' kernels, checked
// for every input (labelled slow: about a minute): AVX512-FP16's sum,
// product, max and min of every pair of fp16 codes, and AVX512-BF16's
// rounding of every fp32 bit pattern, against the plain AVX-512 kernels, with
// and without DAZ and FTZ. Skipped, saying why, on CPUs without them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "collectives/reduce/narrow_simd.h"
#include "flush_denormals.h"

namespace hcl::narrow_simd {
namespace {

#ifdef HCL_NARROW_SIMD

template <class T>
struct Aligned {
  explicit Aligned(size_t n) : p(static_cast<T*>(std::aligned_alloc(64, n * sizeof(T)))) {}
  struct Free {
    void operator()(T* q) const { std::free(q); }
  };
  std::unique_ptr<T[], Free> p;
};

bool isNaN16(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; }

TEST(NarrowSimdExhaustive, Fp16ArithmeticForEveryPairOfCodes) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512fp16") || !__builtin_cpu_supports("avx512bf16") ||
      !__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "this CPU lacks AVX512-FP16 (Intel Sapphire Rapids or later)";
  constexpr size_t kN = 65536;
  Aligned<uint16_t> a(kN), b(kN), got(kN), want(kN);
  for (size_t i = 0; i < kN; ++i) a.p[i] = static_cast<uint16_t>(i);
  for (const bool flush : {false, true}) {
    const FlushDenormals mode(flush);
    for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min}) {
      if (flush && (kind == ReduceKind::Max || kind == ReduceKind::Min)) continue;  // no arithmetic
      long mismatches = 0;
      for (size_t y = 0; y < kN; ++y) {
        for (size_t i = 0; i < kN; ++i) b.p[i] = static_cast<uint16_t>(y);
        Call c{.dst = got.p.get(), .dstForm = Form::Native, .a = a.p.get(), .aForm = Form::Native,
               .b = b.p.get(), .bForm = Form::Native, .count = kN, .type = hclFloat16, .kind = kind,
               .scalar = 1.0f, .nranks = 1.0f};
        ASSERT_EQ(detail::reduceAvx512Fp16(c), kN);
        c.dst = want.p.get();
        ASSERT_EQ(detail::reduceAvx512(c), kN);
        for (size_t i = 0; i < kN; ++i) {
          const bool ok = isNaN16(a.p[i]) && isNaN16(b.p[i]) ? isNaN16(got.p[i]) : got.p[i] == want.p[i];
          if (!ok && mismatches++ < 5)
            ADD_FAILURE() << reduceKindName(kind) << std::hex << " 0x" << a.p[i] << " 0x" << y << ": got 0x"
                          << got.p[i] << " want 0x" << want.p[i] << (flush ? " (DAZ, FTZ)" : "");
        }
      }
      EXPECT_EQ(mismatches, 0) << reduceKindName(kind);
    }
  }
}

TEST(NarrowSimdExhaustive, Bf16RoundingForEveryFp32Value) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw"))
    GTEST_SKIP() << "this CPU lacks AVX512-BF16 (Intel Cooper Lake, AMD Zen 4 or later)";
  constexpr size_t kN = size_t{1} << 24;
  Aligned<uint32_t> in(kN);
  Aligned<uint16_t> got(kN), want(kN);
  for (const bool flush : {false, true}) {
    const FlushDenormals mode(flush);
    long mismatches = 0;
    for (uint64_t base = 0; base < (uint64_t{1} << 32); base += kN) {
      for (size_t i = 0; i < kN; ++i) in.p[i] = static_cast<uint32_t>(base + i);
      Call c{.dst = got.p.get(), .dstForm = Form::Native, .a = in.p.get(), .aForm = Form::Acc, .b = nullptr,
             .bForm = Form::Acc, .count = kN, .type = hclBfloat16, .kind = ReduceKind::Sum, .scalar = 1.0f,
             .nranks = 1.0f};
      ASSERT_EQ(detail::convertAvx512Bf16(c), kN);
      c.dst = want.p.get();
      ASSERT_EQ(detail::convertAvx512(c), kN);
      for (size_t i = 0; i < kN; ++i)
        if (got.p[i] != want.p[i] && mismatches++ < 5)
          ADD_FAILURE() << std::hex << "fp32 0x" << in.p[i] << ": got 0x" << got.p[i] << " want 0x" << want.p[i]
                        << (flush ? " (DAZ, FTZ)" : "");
    }
    EXPECT_EQ(mismatches, 0);
  }
}

#else

TEST(NarrowSimdExhaustive, Fp16ArithmeticForEveryPairOfCodes) { GTEST_SKIP() << "the fused kernels need GCC on x86-64"; }

#endif

}  // namespace
}  // namespace hcl::narrow_simd
