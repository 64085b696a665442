// The element-wise combine operators and the load/store steps of the
// reduction contract, for one accumulator type at a time.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace hcl::reduce_ops {

// Integer arithmetic wraps: it is done in an unsigned type at least as wide as
// unsigned int, so that neither promotion nor overflow can be undefined.
template <class T>
using WrapInt = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

template <class T>
using FloatBits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

struct Add {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return T(WrapInt<T>(a) + WrapInt<T>(b));
    else
      return a + b;
  }
};

struct Mul {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return T(WrapInt<T>(a) * WrapInt<T>(b));
    else
      return a * b;
  }
};

// Floats: NaN-propagating, and +0 is larger than -0 whatever the operand order
// (IEEE 754-2019 maximum/minimum), so results never depend on that order.
struct Max {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a > b ? a : b;
    } else {
      T r = a > b ? a : b;
      r = a == b ? std::bit_cast<T>(std::bit_cast<FloatBits<T>>(a) & std::bit_cast<FloatBits<T>>(b))
                 : r;
      return a != a ? a : r;  // a NaN; a NaN b already gave r = b
    }
  }
};

struct Min {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? a : b;
    } else {
      T r = a < b ? a : b;
      r = a == b ? std::bit_cast<T>(std::bit_cast<FloatBits<T>>(a) | std::bit_cast<FloatBits<T>>(b))
                 : r;
      return a != a ? a : r;
    }
  }
};

// The PreMulSum scalar as the accumulator type T multiplies by it.
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
Scalar<T> makeScalar(double f, int64_t s, uint64_t u) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(f);
  else if constexpr (std::is_signed_v<T>)
    return Scalar<T>(std::make_unsigned_t<T>(s));  // wraps to T's width
  else
    return Scalar<T>(T(u));
}

template <class T>
T scale(T x, Scalar<T> s) {
  if constexpr (std::is_floating_point_v<T>)
    return x * s;
  else
    return T(WrapInt<T>(x) * s);
}

// The Avg divisor as the type the division is done in.
template <class T>
using Divisor = std::conditional_t<std::is_floating_point_v<T>, T,
                                   std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Floats divide in the accumulator type; integers divide the wrapped sum,
// truncating toward zero. Integers of up to 32 bits divide in fp64, which
// vectorizes where integer division does not, and is exact: the quotient of
// |x| < 2^32 by n is at least 1/n away from the next integer, far more than
// half a unit in the last place of a 53-bit mantissa, so truncating the
// correctly rounded fp64 quotient gives the integer quotient.
template <class T>
T divide(T x, Divisor<T> n) {
  if constexpr (std::is_integral_v<T> && sizeof(T) <= 4)
    return T(static_cast<int64_t>(static_cast<double>(x) / static_cast<double>(n)));
  else
    return T(Divisor<T>(x) / n);
}

}  // namespace hcl::reduce_ops
