#include "collectives/reduce/narrow_simd.h"

namespace hcl::narrow_simd {
namespace {

enum class Level { None, Avx2, Avx512 };

Level level() {
#if !defined(HCL_NARROW_SIMD)
  return Level::None;
#elif defined(HCL_NO_ISA_CLONES)
  // A copy of the kernels built for one ISA level (the tests' baseline and
  // x86-64-v3 builds): run what that level has, whatever this CPU has.
#if defined(__AVX512F__) && defined(__F16C__)
  return Level::Avx512;
#elif defined(__AVX2__) && defined(__F16C__)
  return Level::Avx2;
#else
  return Level::None;
#endif
#else
  static const Level chosen = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) return Level::None;
    return __builtin_cpu_supports("avx512f") ? Level::Avx512 : Level::Avx2;
  }();
  return chosen;
#endif
}

}  // namespace

size_t reduce(const Call& call) {
#ifdef HCL_NARROW_SIMD
  switch (level()) {
    case Level::Avx512: return detail::reduceAvx512(call);
    case Level::Avx2: return detail::reduceAvx2(call);
    case Level::None: break;
  }
#endif
  (void)call;
  return 0;
}

size_t convert(const Call& call) {
#ifdef HCL_NARROW_SIMD
  switch (level()) {
    case Level::Avx512: return detail::convertAvx512(call);
    case Level::Avx2: return detail::convertAvx2(call);
    case Level::None: break;
  }
#endif
  (void)call;
  return 0;
}

size_t reduceTwice(const Call& call) {
#ifdef HCL_NARROW_SIMD
  switch (level()) {
    case Level::Avx512: return detail::reduceTwiceAvx512(call);
    case Level::Avx2: return detail::reduceTwiceAvx2(call);
    case Level::None: break;
  }
#endif
  (void)call;
  return 0;
}

size_t lanes() {
  switch (level()) {
    case Level::Avx512: return 16;
    case Level::Avx2: return 8;
    case Level::None: break;
  }
  return 0;
}

}  // namespace hcl::narrow_simd
