// The AVX-512 kernels with bf16 rounded by AVX512-BF16's conversion (Intel
// Cooper Lake and Sapphire Rapids and later, AMD Zen 4 and later): one
// instruction per block instead of the integer rounding, with the same bits.
// The instruction rounds to nearest-even and quiets NaNs the way
// floatToBf16 does, but reads fp32 subnormals as zeros; blocks holding one
// take the integer rounding.
#include "collectives/reduce/narrow_simd.h"

#ifdef HCL_NARROW_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bf16,avx2,f16c")
// As in narrow_simd_avx512.cc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "collectives/reduce/narrow_simd_kernels.h"
#include "collectives/reduce/narrow_simd_avx512_vector.h"

namespace hcl::narrow_simd {
namespace {

struct Avx512Bf16 : Avx512 {
  static H convertBf16(F v) { return reinterpret_cast<H>(_mm512_cvtneps_pbh(v)); }
  // A zero exponent with a non-zero fraction.
  static bool anySubnormal(F v) {
    const I x = bits(v);
    return (_mm512_testn_epi32_mask(x, set1i(0x7F800000)) & _mm512_test_epi32_mask(x, set1i(0x007FFFFF))) != 0;
  }
};

}  // namespace

size_t detail::reduceAvx512Bf16(const Call& call) { return reduceWith<Avx512Bf16>(call); }
size_t detail::convertAvx512Bf16(const Call& call) { return convertWith<Avx512Bf16>(call); }
size_t detail::reduceTwiceAvx512Bf16(const Call& call) { return reduceTwiceWith<Avx512Bf16>(call); }

}  // namespace hcl::narrow_simd

#pragma GCC diagnostic pop
#pragma GCC pop_options

#endif
