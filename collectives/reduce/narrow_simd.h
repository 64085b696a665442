// Fused vector kernels for the fp16, bf16 and fp8 reductions: each block of
// elements is widened, combined and rounded in registers in one pass, instead
// of the chunked passes through fp32 buffers of reduce_narrow.cc, which runs
// whatever these leave (the tail, CPUs without AVX2 and F16C). Results are
// bit-identical to that path: the same fp32 operations in the same order,
// the same F16C rounding, and bf16 and fp8 rounding done with the same
// integer (and, for fp8 subnormals, fp32) operations, or with instructions
// proven to give the same bits (AVX512-BF16's rounding, AVX512-FP16's
// arithmetic; numerics.md says why).
// (Which NaN an operation on two NaNs returns is pinned by neither: the
// compiler may swap the operands of an add.) The same kernels store a
// float32 result into two buffers in one pass (reduceTwice), with the
// operations of the loops of direct_kernels.h.
#pragma once

#include <cstddef>

#include "collectives/reduce/reduce.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HCL_NARROW_SIMD 1
#endif

namespace hcl::narrow_simd {

struct Call {
  void* dst;
  Form dstForm;
  const void* a;
  Form aForm;
  const void* b;  // unused by convert
  Form bForm;
  size_t count;
  hclDataType_t type;
  ReduceKind kind;
  float scalar;  // PreMulSum: Native operands are multiplied by it on load
  float nranks;  // Avg: a Native destination is divided by it
  // reduceTwice only: the second destination, and which of the two are
  // stored past the cache (each such one aligned to the vector's bytes).
  void* dst2 = nullptr;
  bool streamDst = false, streamDst2 = false;
};

// spec's PreMulSum scalar and Avg divisor in fp32, as the fused kernels and
// reduce_narrow.cc's chunked path both apply them.
inline float scalarOf(const ReduceSpec& spec) { return static_cast<float>(spec.scalarFloat); }
inline float divisorOf(const ReduceSpec& spec) { return static_cast<float>(spec.nranks < 1 ? 1 : spec.nranks); }

// A Call of spec's type and operator; reduceTwice's destinations and stores
// are set on it afterwards.
inline Call callFor(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm, size_t count,
                    const ReduceSpec& spec) {
  return {.dst = dst,
          .dstForm = dstForm,
          .a = a,
          .aForm = aForm,
          .b = b,
          .bForm = bForm,
          .count = count,
          .type = spec.type,
          .kind = spec.kind,
          .scalar = scalarOf(spec),
          .nranks = divisorOf(spec)};
}

// Each returns how many leading elements it handled: a multiple of its vector
// width, all of them (the AVX512-FP16 kernels, which mask their tail), or 0
// where no kernel applies (type, CPU or compiler). Operands may
// alias exactly, except that an Acc destination must not alias a Native
// operand (that needs a backward walk, which these do not do).
size_t reduce(const Call& call);
size_t convert(const Call& call);
// reduce() of Native operands into dst and dst2 at once, ending with a store
// fence where it stored past the cache: fp16, bf16 and float32.
size_t reduceTwice(const Call& call);

// The fp32 vector width the kernels run at here: 16 (AVX-512), 8 (AVX2) or
// 0; streamed destinations are aligned to this many elements.
size_t lanes();
// The kernels this CPU runs: "avx512-fp16", "avx512-bf16", "avx512", "avx2"
// or "none".
const char* levelName();

namespace detail {
size_t reduceAvx512(const Call& call);
size_t convertAvx512(const Call& call);
size_t reduceTwiceAvx512(const Call& call);
size_t reduceAvx2(const Call& call);
size_t convertAvx2(const Call& call);
size_t reduceTwiceAvx2(const Call& call);
// AVX-512 with bf16 rounded by AVX512-BF16 (narrow_simd_avx512bf16.cc).
size_t reduceAvx512Bf16(const Call& call);
size_t convertAvx512Bf16(const Call& call);
size_t reduceTwiceAvx512Bf16(const Call& call);
// Those, with fp16 sums, products, maxima and minima of fp16 operands into
// fp16 done in AVX512-FP16 (narrow_simd_avx512fp16.cc).
size_t reduceAvx512Fp16(const Call& call);
size_t reduceTwiceAvx512Fp16(const Call& call);
}  // namespace detail

}  // namespace hcl::narrow_simd
