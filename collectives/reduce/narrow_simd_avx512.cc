// The fused kernels with AVX-512 (16 fp32 lanes).
#include "collectives/reduce/narrow_simd.h"

#ifdef HCL_NARROW_SIMD

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,f16c")
// GCC 12's AVX-512 conversion intrinsics start from _mm512_undefined_*(),
// which it then reports as (maybe) uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "collectives/reduce/narrow_simd_kernels.h"
#include "collectives/reduce/narrow_simd_avx512_vector.h"

namespace hcl::narrow_simd {

size_t detail::reduceAvx512(const Call& call) { return reduceWith<Avx512>(call); }
size_t detail::convertAvx512(const Call& call) { return convertWith<Avx512>(call); }
size_t detail::reduceTwiceAvx512(const Call& call) { return reduceTwiceWith<Avx512>(call); }

}  // namespace hcl::narrow_simd

#pragma GCC diagnostic pop
#pragma GCC pop_options

#endif
