#include "collectives/reduce/narrow_simd.h"

namespace hcl::narrow_simd {
namespace {

enum class Level { None, Avx2, Avx512, Avx512Bf16, Avx512Fp16 };

// Asked once per process, by kernels().
Level level() {
#if !defined(HCL_NARROW_SIMD)
  return Level::None;
#elif defined(HCL_NO_ISA_CLONES)
  // A copy of the kernels built for one ISA level (the tests' baseline and
  // x86-64-v3 builds): run what that level has, whatever this CPU has.
#if defined(__AVX512FP16__) && defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__F16C__)
  return Level::Avx512Fp16;
#elif defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__F16C__)
  return Level::Avx512Bf16;
#elif defined(__AVX512F__) && defined(__F16C__)
  return Level::Avx512;
#elif defined(__AVX2__) && defined(__F16C__)
  return Level::Avx2;
#else
  return Level::None;
#endif
#else
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) return Level::None;
  if (!__builtin_cpu_supports("avx512f")) return Level::Avx2;
  // GCC's avx512bf16 target implies AVX512BW, which its code may use.
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw")) return Level::Avx512;
  return __builtin_cpu_supports("avx512fp16") && __builtin_cpu_supports("avx512vl") ? Level::Avx512Fp16
                                                                                    : Level::Avx512Bf16;
#endif
}

struct Kernels {
  size_t (*reduce)(const Call&);
  size_t (*convert)(const Call&);
  size_t (*reduceTwice)(const Call&);
  size_t lanes;
  const char* name;
};

size_t none(const Call&) { return 0; }

const Kernels& kernels() {
  static const Kernels chosen = []() -> Kernels {
    switch (level()) {
#ifdef HCL_NARROW_SIMD
      case Level::Avx512Fp16:
        return {detail::reduceAvx512Fp16, detail::convertAvx512Bf16, detail::reduceTwiceAvx512Fp16, 16, "avx512-fp16"};
      case Level::Avx512Bf16:
        return {detail::reduceAvx512Bf16, detail::convertAvx512Bf16, detail::reduceTwiceAvx512Bf16, 16, "avx512-bf16"};
      case Level::Avx512: return {detail::reduceAvx512, detail::convertAvx512, detail::reduceTwiceAvx512, 16, "avx512"};
      case Level::Avx2: return {detail::reduceAvx2, detail::convertAvx2, detail::reduceTwiceAvx2, 8, "avx2"};
#endif
      default: return {none, none, none, 0, "none"};
    }
  }();
  return chosen;
}

}  // namespace

size_t reduce(const Call& call) { return kernels().reduce(call); }
size_t convert(const Call& call) { return kernels().convert(call); }
size_t reduceTwice(const Call& call) { return kernels().reduceTwice(call); }
size_t lanes() { return kernels().lanes; }
const char* levelName() { return kernels().name; }

}  // namespace hcl::narrow_simd
