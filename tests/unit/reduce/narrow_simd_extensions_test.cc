// The kernels for AVX-512's extensions against the plain AVX-512 ones they
// stand in for, bit for bit:
// - AVX512-FP16's fp16 sums, products, maxima and minima: every fp16 code
//   against a set of edge codes, in both operand orders, at every tail
//   length, into one destination or two;
// - AVX512-BF16's rounding of fp32 to bf16: random and edge fp32 values,
//   with subnormals alone and among normals in a block, converted and
//   reduced.
// The tests that compare hcl::reduce with a double-precision model run
// through them too where the CPU has them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/reduce/narrow_simd.h"
#include "flush_denormals.h"

namespace hcl::narrow_simd {
namespace {

#ifdef HCL_NARROW_SIMD

bool cpuHasFp16Kernels() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512fp16") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c");
}

bool cpuHasBf16Kernels() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("f16c");
}

#define REQUIRE_BF16_KERNELS() \
  if (!cpuHasBf16Kernels()) GTEST_SKIP() << "this CPU lacks AVX512-BF16 (Intel Cooper Lake, AMD Zen 4 or later)"

#define REQUIRE_FP16_KERNELS()                                                          \
  if (!cpuHasFp16Kernels()) GTEST_SKIP() << "this CPU lacks AVX512-FP16 (Intel Sapphire Rapids or later)"

// The widest kernels the CPU runs are the ones chosen: the extensions' give
// the same bits as the plain ones, so no other test would notice otherwise.
TEST(NarrowSimdLevel, IsTheWidestTheCpuRuns) {
  __builtin_cpu_init();
  std::string want = "none";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
    want = "avx2";
    if (__builtin_cpu_supports("avx512f")) want = "avx512";
    if (want == "avx512" && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw"))
      want = "avx512-bf16";
    if (want == "avx512-bf16" && __builtin_cpu_supports("avx512fp16") && __builtin_cpu_supports("avx512vl"))
      want = "avx512-fp16";
  }
  EXPECT_EQ(levelName(), want);
  EXPECT_EQ(lanes(), want == "none" ? 0u : want == "avx2" ? 8u : 16u);
}

constexpr ReduceKind kOps[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min};

bool isNaN(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; }

// Zeros, subnormals, the normal range's ends, one, the largest finite values,
// infinities, and quiet and signalling NaNs of both signs, then random codes.
std::vector<uint16_t> edgeCodes() {
  std::vector<uint16_t> codes = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x8400,
                                 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF, 0x7BFE, 0x7C00, 0xFC00,
                                 0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7DFF, 0x7FFF, 0x1400, 0x5BFF};
  std::mt19937 rng(20261130);
  for (int i = 0; i < 40; ++i) codes.push_back(static_cast<uint16_t>(rng()));
  return codes;
}

ReduceSpec specOf(hclDataType_t type, ReduceKind kind) {
  ReduceSpec spec;
  spec.type = type;
  spec.kind = kind;
  return spec;
}

// An fp16 call on Native operands.
Call fp16Call(ReduceKind kind, void* dst, const void* a, const void* b, size_t count) {
  return callFor(dst, Form::Native, a, Form::Native, b, Form::Native, count, specOf(hclFloat16, kind));
}

// The fp32 kernel's result for count elements, padded to its 16 lanes.
std::vector<uint16_t> expected(ReduceKind kind, const uint16_t* a, const uint16_t* b, size_t count) {
  const size_t padded = (count + 15) / 16 * 16;
  std::vector<uint16_t> pa(padded), pb(padded), out(padded);
  std::memcpy(pa.data(), a, count * 2);
  std::memcpy(pb.data(), b, count * 2);
  EXPECT_EQ(detail::reduceAvx512(fp16Call(kind, out.data(), pa.data(), pb.data(), padded)), padded);
  out.resize(count);
  return out;
}

// Equal bits, except that where both operands are NaN either may come out.
void expectSameBits(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const uint16_t* a,
                    const uint16_t* b, ReduceKind kind, const std::string& where) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = (isNaN(a[i]) && isNaN(b[i])) ? isNaN(got[i]) : got[i] == want[i];
    if (!ok && reported++ < 5)
      ADD_FAILURE() << where << " " << reduceKindName(kind) << std::hex << ": a=0x" << a[i] << " b=0x" << b[i]
                    << " got 0x" << got[i] << " want 0x" << want[i];
  }
}

// With DAZ and FTZ set too: fp16 subnormals are fp32 normals, and
// AVX512-FP16 ignores both flags, so the bits stay the same.
TEST(NarrowSimdFp16, EveryCodeAgainstTheEdgeCodesMatchesTheFp32Kernel) {
  REQUIRE_FP16_KERNELS();
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (const bool flush : {false, true}) {
  const FlushDenormals mode(flush);
  for (uint16_t edge : edgeCodes()) {
    const std::vector<uint16_t> same(all.size(), edge);
    for (ReduceKind kind : kOps) {
      for (int order = 0; order < 2; ++order) {
        const uint16_t* a = order == 0 ? all.data() : same.data();
        const uint16_t* b = order == 0 ? same.data() : all.data();
        std::vector<uint16_t> got(all.size());
        ASSERT_EQ(detail::reduceAvx512Fp16(fp16Call(kind, got.data(), a, b, all.size())), all.size());
        expectSameBits(got, expected(kind, a, b, all.size()), a, b, kind,
                       "edge " + std::to_string(edge) + (order == 0 ? " as b" : " as a") +
                           (flush ? ", DAZ and FTZ" : ""));
      }
    }
  }
  }
}

TEST(NarrowSimdFp16, TailsOffsetsAndAliasing) {
  REQUIRE_FP16_KERNELS();
  std::mt19937 rng(7);
  for (size_t count = 1; count <= 100; ++count) {
    for (size_t offset : {0, 1, 7}) {
      std::vector<uint16_t> a(count + offset + 1), b(count + offset + 1), out(count + offset + 1, 0xABCD);
      for (auto& x : a) x = static_cast<uint16_t>(rng());
      for (auto& x : b) x = static_cast<uint16_t>(rng());
      for (ReduceKind kind : kOps) {
        const uint16_t* pa = a.data() + offset;
        const uint16_t* pb = b.data() + offset;
        const std::vector<uint16_t> want = expected(kind, pa, pb, count);
        ASSERT_EQ(detail::reduceAvx512Fp16(fp16Call(kind, out.data() + offset, pa, pb, count)), count);
        expectSameBits({out.begin() + offset, out.begin() + offset + count}, want, pa, pb, kind,
                       "count " + std::to_string(count));
        EXPECT_EQ(out[offset + count], 0xABCD) << "stored past the end, count " << count;
        std::vector<uint16_t> inPlace(a);
        detail::reduceAvx512Fp16(fp16Call(kind, inPlace.data() + offset, inPlace.data() + offset, pb, count));
        expectSameBits({inPlace.begin() + offset, inPlace.begin() + offset + count}, want, pa, pb, kind,
                       "in place, count " + std::to_string(count));
      }
    }
  }
}

TEST(NarrowSimdFp16, IntoTwoDestinationsStreamedOrNot) {
  REQUIRE_FP16_KERNELS();
  constexpr size_t kCount = 1000;  // not a multiple of 32
  std::mt19937 rng(11);
  std::vector<uint16_t> a(kCount), b(kCount);
  for (auto& x : a) x = static_cast<uint16_t>(rng());
  for (auto& x : b) x = static_cast<uint16_t>(rng());
  alignas(64) static uint16_t dst[kCount + 32], dst2[kCount + 32];
  for (ReduceKind kind : kOps) {
    const std::vector<uint16_t> want = expected(kind, a.data(), b.data(), kCount);
    for (int streams = 0; streams < 4; ++streams) {
      // Streamed destinations are aligned to 16 lanes, not to 32.
      uint16_t* d1 = dst + 16;
      uint16_t* d2 = dst2 + ((streams & 2) ? 16 : 5);
      std::memset(dst, 0xEE, sizeof dst);
      std::memset(dst2, 0xEE, sizeof dst2);
      Call c = fp16Call(kind, d1, a.data(), b.data(), kCount);
      c.dst2 = d2;
      c.streamDst = (streams & 1) != 0;
      c.streamDst2 = (streams & 2) != 0;
      ASSERT_EQ(detail::reduceTwiceAvx512Fp16(c), kCount);
      const std::string where = "streams " + std::to_string(streams);
      expectSameBits({d1, d1 + kCount}, want, a.data(), b.data(), kind, where + " dst");
      expectSameBits({d2, d2 + kCount}, want, a.data(), b.data(), kind, where + " dst2");
      EXPECT_EQ(d1[kCount], 0xEEEE) << where;
      EXPECT_EQ(d2[kCount], 0xEEEE) << where;
    }
  }
}

TEST(NarrowSimdFp16, LeavesOtherTypesAndOperatorsToTheFp32Kernels) {
  REQUIRE_FP16_KERNELS();
  constexpr size_t kCount = 64;
  std::vector<uint16_t> a(kCount), b(kCount), got(kCount), want(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    a[i] = static_cast<uint16_t>(0x3C00 + i * 37);
    b[i] = static_cast<uint16_t>(0x3800 + i * 53);
  }
  for (ReduceKind kind : {ReduceKind::Avg, ReduceKind::PreMulSum}) {
    Call c = fp16Call(kind, got.data(), a.data(), b.data(), kCount);
    c.scalar = 0.3f;
    c.nranks = 3.0f;
    Call w = c;
    w.dst = want.data();
    EXPECT_EQ(detail::reduceAvx512Fp16(c), detail::reduceAvx512(w));
    EXPECT_EQ(got, want) << reduceKindName(kind);
  }
  Call c = fp16Call(ReduceKind::Sum, got.data(), a.data(), b.data(), kCount);
  c.type = hclBfloat16;
  Call w = c;
  w.dst = want.data();
  EXPECT_EQ(detail::reduceAvx512Fp16(c), detail::reduceAvx512(w));
  EXPECT_EQ(got, want) << "bf16";
}

// fp32 bit patterns: random ones, the rounding edges, and subnormals that
// round to non-zero bf16 codes, some in blocks of their own and some among
// normals.
std::vector<uint32_t> bf16TestBits() {
  std::vector<uint32_t> v = {0x00010000u, 0x80010000u, 0x007F0000u, 0x007FFFFFu, 0x00008000u, 0x00018000u,
                             0x00008001u, 0x807FFFFFu, 0x00000001u, 0x00800000u, 0x3F808000u, 0x3F818000u,
                             0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0xFFFFFFFFu, 0x7FBF8001u, 0x00000000u};
  std::mt19937 rng(3);
  for (int i = 0; i < 16; ++i) v.push_back(rng() & 0x807FFFFFu);  // a block of subnormals
  for (int i = 0; i < (1 << 20); ++i) v.push_back(rng());
  for (int i = 0; i < 64; ++i) v[1000 + i * 37] = rng() & 0x807FFFFFu;  // subnormals among normals
  return v;
}

Call bf16Call(ReduceKind kind, void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
              size_t count) {
  return callFor(dst, dstForm, a, aForm, b, bForm, count, specOf(hclBfloat16, kind));
}

TEST(NarrowSimdBf16, RoundingMatchesThePlainKernelForEveryKindOfValue) {
  REQUIRE_BF16_KERNELS();
  const std::vector<uint32_t> in = bf16TestBits();
  const size_t n = in.size() / 16 * 16;
  for (const bool flush : {false, true}) {
  const FlushDenormals mode(flush);
  std::vector<uint16_t> got(n), want(n);
  ASSERT_EQ(detail::convertAvx512Bf16(bf16Call(ReduceKind::Sum, got.data(), Form::Native, in.data(), Form::Acc,
                                               nullptr, Form::Acc, n)),
            n);
  ASSERT_EQ(detail::convertAvx512(bf16Call(ReduceKind::Sum, want.data(), Form::Native, in.data(), Form::Acc,
                                           nullptr, Form::Acc, n)),
            n);
  int reported = 0;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && reported++ < 5)
      ADD_FAILURE() << std::hex << "fp32 0x" << in[i] << ": got 0x" << got[i] << " want 0x" << want[i]
                    << (flush ? ", DAZ and FTZ" : "");
  }
}

TEST(NarrowSimdBf16, ReductionsMatchThePlainKernel) {
  REQUIRE_BF16_KERNELS();
  constexpr size_t kCount = 4096;
  std::mt19937 rng(5);
  std::vector<uint16_t> a(kCount), b(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    // Every fourth block of bf16 subnormals, whose sums and products are fp32 subnormals.
    const bool tiny = (i / 16) % 4 == 1;
    a[i] = static_cast<uint16_t>(tiny ? rng() & 0x807F : rng());
    b[i] = static_cast<uint16_t>(tiny ? rng() & 0x807F : rng());
  }
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min, ReduceKind::Avg,
                          ReduceKind::PreMulSum}) {
    std::vector<uint16_t> got(kCount), want(kCount), got2(kCount), want2(kCount);
    Call c = bf16Call(kind, got.data(), Form::Native, a.data(), Form::Native, b.data(), Form::Native, kCount);
    c.scalar = 0.37f;
    c.nranks = 3.0f;
    Call w = c;
    w.dst = want.data();
    ASSERT_EQ(detail::reduceAvx512Bf16(c), kCount);
    ASSERT_EQ(detail::reduceAvx512(w), kCount);
    c.dst2 = got2.data();
    w.dst2 = want2.data();
    ASSERT_EQ(detail::reduceTwiceAvx512Bf16(c), kCount);
    ASSERT_EQ(detail::reduceTwiceAvx512(w), kCount);
    for (size_t i = 0; i < kCount; ++i) {
      const bool bothNaN = (a[i] & 0x7FFF) > 0x7F80 && (b[i] & 0x7FFF) > 0x7F80;
      if (bothNaN) continue;
      ASSERT_EQ(got[i], want[i]) << reduceKindName(kind) << " at " << i;
      ASSERT_EQ(got2[i], want2[i]) << reduceKindName(kind) << " twice, at " << i;
    }
  }
}

#else

TEST(NarrowSimdFp16, EveryCodeAgainstTheEdgeCodesMatchesTheFp32Kernel) {
  GTEST_SKIP() << "the fused kernels need GCC on x86-64";
}

#endif

}  // namespace
}  // namespace hcl::narrow_simd
