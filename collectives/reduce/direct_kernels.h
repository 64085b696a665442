// Reduction loops for the types that accumulate in themselves (integers,
// fp32, fp64). Each loop is instantiated for one type, operator and set of
// load/store steps, so the per-element body is branch-free and GCC vectorizes
// it; the choice is made once per call. Exact aliasing gets its own loop so
// that every pointer can be __restrict.
#pragma once

#include <cstring>
#include <utility>

#include "collectives/reduce/isa_clones.h"
#include "collectives/reduce/reduce_kernels.h"
#include "collectives/reduce/reduce_ops.h"

namespace hcl::reduce_kernels {

template <class T>
struct DirectParams {
  reduce_ops::Scalar<T> scalar;
  reduce_ops::Divisor<T> nranks;
};

template <class T>
DirectParams<T> makeDirectParams(const ReduceSpec& spec) {
  return {reduce_ops::makeScalar<T>(spec.scalarFloat, spec.scalarInt, spec.scalarUint),
          reduce_ops::Divisor<T>(spec.nranks < 1 ? 1 : spec.nranks)};
}

// ScaleA/ScaleB: the operand is Native under PreMulSum. Divide: Avg into a Native dst.
template <class T, class Op, bool ScaleA, bool ScaleB, bool Divide>
struct DirectLoop {
  using S = reduce_ops::Scalar<T>;
  using D = reduce_ops::Divisor<T>;

  static T element(T x, T y, S s, D n) {
    if constexpr (ScaleA) x = reduce_ops::scale(x, s);
    if constexpr (ScaleB) y = reduce_ops::scale(y, s);
    T r = Op::apply(x, y);
    if constexpr (Divide) r = reduce_ops::divide(r, n);
    return r;
  }

  HCL_ISA_CLONES static void disjoint(T* __restrict d, const T* __restrict a, const T* __restrict b, size_t n, S s,
                                      D nr) {
    for (size_t i = 0; i < n; ++i) d[i] = element(a[i], b[i], s, nr);
  }
  HCL_ISA_CLONES static void intoA(T* __restrict io, const T* __restrict b, size_t n, S s, D nr) {
    for (size_t i = 0; i < n; ++i) io[i] = element(io[i], b[i], s, nr);
  }
  HCL_ISA_CLONES static void intoB(T* __restrict io, const T* __restrict a, size_t n, S s, D nr) {
    for (size_t i = 0; i < n; ++i) io[i] = element(a[i], io[i], s, nr);
  }
  HCL_ISA_CLONES static void intoBoth(T* __restrict io, size_t n, S s, D nr) {
    for (size_t i = 0; i < n; ++i) io[i] = element(io[i], io[i], s, nr);
  }

  static void run(T* d, const T* a, const T* b, size_t n, const DirectParams<T>& p) {
    if (d == a && d == b)
      intoBoth(d, n, p.scalar, p.nranks);
    else if (d == a)
      intoA(d, b, n, p.scalar, p.nranks);
    else if (d == b)
      intoB(d, a, n, p.scalar, p.nranks);
    else
      disjoint(d, a, b, n, p.scalar, p.nranks);
  }
};

template <class T, bool Scale, bool Divide>
struct DirectUnaryLoop {
  using S = reduce_ops::Scalar<T>;
  using D = reduce_ops::Divisor<T>;

  static T element(T x, S s, D n) {
    if constexpr (Scale) x = reduce_ops::scale(x, s);
    if constexpr (Divide) x = reduce_ops::divide(x, n);
    return x;
  }
  HCL_ISA_CLONES static void disjoint(T* __restrict d, const T* __restrict src, size_t n, S s, D nr) {
    for (size_t i = 0; i < n; ++i) d[i] = element(src[i], s, nr);
  }
  HCL_ISA_CLONES static void inPlace(T* __restrict io, size_t n, S s, D nr) {
    for (size_t i = 0; i < n; ++i) io[i] = element(io[i], s, nr);
  }
  static void run(T* d, const T* src, size_t n, const DirectParams<T>& p) {
    if (d == src)
      inPlace(d, n, p.scalar, p.nranks);
    else
      disjoint(d, src, n, p.scalar, p.nranks);
  }
};

template <class T>
void reduceDirect(T* dst, Form dstForm, const T* a, Form aForm, const T* b, Form bForm,
                  size_t count, const ReduceSpec& spec) {
  using namespace reduce_ops;
  const DirectParams<T> p = makeDirectParams<T>(spec);
  switch (spec.kind) {
    case ReduceKind::Sum: DirectLoop<T, Add, false, false, false>::run(dst, a, b, count, p); return;
    case ReduceKind::Prod: DirectLoop<T, Mul, false, false, false>::run(dst, a, b, count, p); return;
    case ReduceKind::Max: DirectLoop<T, Max, false, false, false>::run(dst, a, b, count, p); return;
    case ReduceKind::Min: DirectLoop<T, Min, false, false, false>::run(dst, a, b, count, p); return;
    case ReduceKind::Avg:
      if (dstForm == Form::Native)
        DirectLoop<T, Add, false, false, true>::run(dst, a, b, count, p);
      else
        DirectLoop<T, Add, false, false, false>::run(dst, a, b, count, p);
      return;
    case ReduceKind::PreMulSum: {
      bool scaleA = aForm == Form::Native, scaleB = bForm == Form::Native;
      if (scaleB && !scaleA) {  // addition commutes: keep one single-scale loop
        std::swap(a, b);
        std::swap(scaleA, scaleB);
      }
      if (scaleA && scaleB)
        DirectLoop<T, Add, true, true, false>::run(dst, a, b, count, p);
      else if (scaleA)
        DirectLoop<T, Add, true, false, false>::run(dst, a, b, count, p);
      else
        DirectLoop<T, Add, false, false, false>::run(dst, a, b, count, p);
      return;
    }
  }
}

template <class T>
void convertDirect(T* dst, Form dstForm, const T* src, Form srcForm, size_t count,
                   const ReduceSpec& spec) {
  const bool scale = spec.kind == ReduceKind::PreMulSum && srcForm == Form::Native;
  const bool divide = spec.kind == ReduceKind::Avg && dstForm == Form::Native;
  const DirectParams<T> p = makeDirectParams<T>(spec);
  if (scale)
    DirectUnaryLoop<T, true, false>::run(dst, src, count, p);
  else if (divide)
    DirectUnaryLoop<T, false, true>::run(dst, src, count, p);
  else if (dst != src)
    std::memcpy(dst, src, count * sizeof(T));
}

}  // namespace hcl::reduce_kernels
