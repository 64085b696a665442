// fp16 <-> fp32 with the x86 F16C instructions, selected at run time.
#include <cstdlib>

#include "collectives/reduce/float_arrays.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HCL_HAVE_F16C_PATH 1
#endif

namespace hcl {

#ifdef HCL_HAVE_F16C_PATH

bool cpuHasF16C() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  }();
  return has;
}

__attribute__((target("avx,f16c"))) void halfToFloatF16C(const uint16_t* src, float* dst,
                                                        size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx,f16c"))) void floatToHalfF16C(const float* src, uint16_t* dst,
                                                        size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

#else

bool cpuHasF16C() { return false; }
void halfToFloatF16C(const uint16_t*, float*, size_t) { std::abort(); }
void floatToHalfF16C(const float*, uint16_t*, size_t) { std::abort(); }

#endif

}  // namespace hcl
