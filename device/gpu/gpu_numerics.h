// The reduction contract of collectives/reduce/reduce.h, one element at a
// time, for GPU kernels. Every function is __host__ __device__ so that a host
// build (tests/gpu/gpu_numerics_test.cc) can check it against the CPU
// reference without a GPU. The narrow float conversions are written here
// again (not taken from float_formats.h) because device code cannot use the
// CPU's tables; they must stay bit-exact with float_formats.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HCL_HD __host__ __device__ __forceinline__
#else
#define HCL_HD inline
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define HCL_GPU_DEVICE_PASS 1
#endif

namespace hcl::gpu {

// ---- bit casts ----

HCL_HD uint32_t floatBits(float f) {
#ifdef HCL_GPU_DEVICE_PASS
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
HCL_HD float bitsFloat(uint32_t u) {
#ifdef HCL_GPU_DEVICE_PASS
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
HCL_HD uint64_t doubleBits(double d) {
#ifdef HCL_GPU_DEVICE_PASS
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
#endif
}
HCL_HD double bitsDouble(uint64_t u) {
#ifdef HCL_GPU_DEVICE_PASS
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}

// ---- narrow float formats (see float_formats.h for the rules) ----

constexpr uint32_t kF32ExpMask = 0x7F800000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32QuietBit = 0x00400000u;

HCL_HD uint32_t minU32(uint32_t a, uint32_t b) { return a < b ? a : b; }

// Round a finite non-negative fp32 (bits `ax`) to nearest-even in a format
// with `manBits` mantissa bits and exponent `bias`; may return a code past
// the largest finite one (callers clamp).
template <int kManBits, int kBias>
HCL_HD uint32_t roundMagnitude(uint32_t ax) {
  constexpr uint32_t kShift = 23 - kManBits;
  constexpr uint32_t kRebias = uint32_t(127 - kBias) << 23;
  constexpr uint32_t kMinNormalExp = 127 - kBias + 1;
  const uint32_t exp = ax >> 23;
  if (exp >= kMinNormalExp) {
    uint32_t r = ax - kRebias;
    r += ((1u << (kShift - 1)) - 1) + ((r >> kShift) & 1u);
    return r >> kShift;
  }
  if (exp == 0) return 0;
  const uint32_t shift = 151 - kBias - kManBits - exp;
  if (shift > 24) return 0;
  const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return q;
}

template <int kManBits, int kBias>
HCL_HD uint32_t decodeMagnitude(uint32_t code) {
  const uint32_t exp = code >> kManBits;
  const uint32_t mant = code & ((1u << kManBits) - 1);
  if (exp == 0) {
    // mant * 2^(1 - bias - manBits), exact: build the product's bits directly.
    if (mant == 0) return 0;
    int e = 1 - kBias - kManBits;  // value = mant * 2^e, mant < 2^manBits
    uint32_t m = mant;
    while (!(m & (1u << kManBits))) {  // normalize to 1.xxx
      m <<= 1;
      --e;
    }
    return uint32_t(e + kManBits + 127) << 23 | ((m & ((1u << kManBits) - 1)) << (23 - kManBits));
  }
  return ((exp + 127 - kBias) << 23) | (mant << (23 - kManBits));
}

HCL_HD uint32_t halfToFloatBits(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t mag = h & 0x7FFFu;
  if (mag >= 0x7C00u) {
    const uint32_t payload = (mag & 0x3FFu) << 13;
    return sign | kF32ExpMask | payload | (payload ? kF32QuietBit : 0u);
  }
  return sign | decodeMagnitude<10, 15>(mag);
}
HCL_HD uint16_t floatToHalf(float f) {
  const uint32_t x = floatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return uint16_t(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  return uint16_t(sign | minU32(roundMagnitude<10, 15>(ax), 0x7C00u));
}

HCL_HD uint32_t bf16ToFloatBits(uint16_t h) { return uint32_t(h) << 16; }
HCL_HD uint16_t floatToBf16(float f) {
  const uint32_t x = floatBits(f);
  if ((x & kF32AbsMask) > kF32ExpMask) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

HCL_HD uint32_t e4m3ToFloatBits(uint8_t c) {
  const uint32_t sign = uint32_t(c & 0x80u) << 24;
  const uint32_t mag = c & 0x7Fu;
  if (mag == 0x7Fu) return sign | kF32ExpMask | kF32QuietBit;
  return sign | decodeMagnitude<3, 7>(mag);
}
HCL_HD uint8_t floatToE4m3(float f) {
  const uint32_t x = floatBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return uint8_t(sign | 0x7Fu);
  return uint8_t(sign | minU32(roundMagnitude<3, 7>(ax), 0x7Eu));
}

HCL_HD uint32_t e5m2ToFloatBits(uint8_t c) {
  const uint32_t sign = uint32_t(c & 0x80u) << 24;
  const uint32_t mag = c & 0x7Fu;
  if (mag == 0x7Cu) return sign | kF32ExpMask;
  if (mag > 0x7Cu) return sign | kF32ExpMask | kF32QuietBit | ((mag & 3u) << 21);
  return sign | decodeMagnitude<2, 15>(mag);
}
HCL_HD uint8_t floatToE5m2(float f) {
  const uint32_t x = floatBits(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t ax = x & kF32AbsMask;
  if (ax > kF32ExpMask) return uint8_t(sign | 0x7Fu);
  if (ax == kF32ExpMask) return uint8_t(sign | 0x7Cu);
  return uint8_t(sign | minU32(roundMagnitude<2, 15>(ax), 0x7Bu));
}

// ---- per-type traits: Native storage, accumulator, widen and narrow ----

template <class T>
struct DirectType {  // integers, fp32, fp64: accumulate in themselves
  using Native = T;
  using Acc = T;
  static HCL_HD Acc widen(Native x) { return x; }
  static HCL_HD Native narrow(Acc x) { return x; }
};
struct HalfType {
  using Native = uint16_t;
  using Acc = float;
  static HCL_HD Acc widen(Native x) { return bitsFloat(halfToFloatBits(x)); }
  static HCL_HD Native narrow(Acc x) { return floatToHalf(x); }
};
struct Bf16Type {
  using Native = uint16_t;
  using Acc = float;
  static HCL_HD Acc widen(Native x) { return bitsFloat(bf16ToFloatBits(x)); }
  static HCL_HD Native narrow(Acc x) { return floatToBf16(x); }
};
struct E4m3Type {
  using Native = uint8_t;
  using Acc = float;
  static HCL_HD Acc widen(Native x) { return bitsFloat(e4m3ToFloatBits(x)); }
  static HCL_HD Native narrow(Acc x) { return floatToE4m3(x); }
};
struct E5m2Type {
  using Native = uint8_t;
  using Acc = float;
  static HCL_HD Acc widen(Native x) { return bitsFloat(e5m2ToFloatBits(x)); }
  static HCL_HD Native narrow(Acc x) { return floatToE5m2(x); }
};

// ---- arithmetic on the accumulator type (reduce_ops.h) ----

template <class T>
using WrapInt = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

template <class T, bool = std::is_floating_point_v<T>>
struct ScalarOf {
  using type = T;
};
template <class T>
struct ScalarOf<T, false> {
  using type = WrapInt<T>;
};
template <class T>
using Scalar = typename ScalarOf<T>::type;

template <class T>
using Divisor = std::conditional_t<std::is_floating_point_v<T>, T,
                                   std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

template <class T>
HCL_HD bool isNan(T x) {
  return x != x;
}

struct OpAdd {
  template <class T>
  static HCL_HD T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return T(WrapInt<T>(a) + WrapInt<T>(b));
    else
      return a + b;
  }
};
struct OpMul {
  template <class T>
  static HCL_HD T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return T(WrapInt<T>(a) * WrapInt<T>(b));
    else
      return a * b;
  }
};
struct OpMax {
  template <class T>
  static HCL_HD T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      T r = a > b ? a : b;
      if (a == b) {
        if constexpr (sizeof(T) == 4)
          r = bitsFloat(floatBits(a) & floatBits(b));
        else
          r = bitsDouble(doubleBits(a) & doubleBits(b));
      }
      return isNan(a) ? a : r;
    }
  }
};
struct OpMin {
  template <class T>
  static HCL_HD T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      T r = a < b ? a : b;
      if (a == b) {
        if constexpr (sizeof(T) == 4)
          r = bitsFloat(floatBits(a) | floatBits(b));
        else
          r = bitsDouble(doubleBits(a) | doubleBits(b));
      }
      return isNan(a) ? a : r;
    }
  }
};

// What a kernel needs of a ReduceSpec and the forms, as plain values.
struct ElementParams {
  double scalarFloat = 1.0;
  int64_t scalarInt = 1;
  uint64_t scalarUint = 1;
  int nranks = 1;
  bool scale = false;   // PreMulSum: Native operands are multiplied on load
  bool divide = false;  // Avg: a Native destination is divided by nranks
  bool dstNative = true;
  bool aNative = true;
  bool bNative = true;
};

template <class Acc>
HCL_HD Scalar<Acc> makeScalar(const ElementParams& p) {
  if constexpr (std::is_floating_point_v<Acc>)
    return static_cast<Acc>(p.scalarFloat);
  else if constexpr (std::is_signed_v<Acc>)
    return Scalar<Acc>(std::make_unsigned_t<Acc>(p.scalarInt));
  else
    return Scalar<Acc>(Acc(p.scalarUint));
}

template <class Acc>
HCL_HD Acc scaleBy(Acc x, Scalar<Acc> s) {
  if constexpr (std::is_floating_point_v<Acc>)
    return x * s;
  else
    return Acc(WrapInt<Acc>(x) * s);
}

template <class Acc>
HCL_HD Acc divideBy(Acc x, int nranks) {
  const Divisor<Acc> n = Divisor<Acc>(nranks < 1 ? 1 : nranks);
  return Acc(Divisor<Acc>(x) / n);
}

// Element i of an operand, in accumulator form.
template <class Tr>
HCL_HD typename Tr::Acc loadElement(const void* src, bool native, size_t i, const ElementParams& p) {
  using Acc = typename Tr::Acc;
  if (!native) return static_cast<const Acc*>(src)[i];
  Acc v = Tr::widen(static_cast<const typename Tr::Native*>(src)[i]);
  if (p.scale) v = scaleBy<Acc>(v, makeScalar<Acc>(p));
  return v;
}

template <class Tr>
HCL_HD void storeElement(void* dst, bool native, size_t i, typename Tr::Acc v, const ElementParams& p) {
  using Acc = typename Tr::Acc;
  if (!native) {
    static_cast<Acc*>(dst)[i] = v;
    return;
  }
  if (p.divide) v = divideBy<Acc>(v, p.nranks);
  static_cast<typename Tr::Native*>(dst)[i] = Tr::narrow(v);
}

template <class Tr, class Op>
HCL_HD void reduceElement(void* dst, const void* a, const void* b, size_t i, const ElementParams& p) {
  const auto x = loadElement<Tr>(a, p.aNative, i, p);
  const auto y = loadElement<Tr>(b, p.bNative, i, p);
  storeElement<Tr>(dst, p.dstNative, i, Op::apply(x, y), p);
}

template <class Tr>
HCL_HD void convertElement(void* dst, const void* src, size_t i, const ElementParams& p) {
  storeElement<Tr>(dst, p.dstNative, i, loadElement<Tr>(src, p.aNative, i, p), p);
}

}  // namespace hcl::gpu
