// Reduction, conversion and spin-wait kernels. Built by nvcc (CUDA) or hipcc
// (HIP) from this one file. Kernels are templated on (data type, operator);
// forms and the PreMulSum/Avg steps are runtime arguments.
#ifdef HCL_GPU_HIP
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#include "device/gpu/gpu_kernels.h"

namespace hcl::gpu {
namespace {

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

template <class Tr, class Op>
__global__ void __launch_bounds__(kThreads) reduceKernel(void* dst, const void* a, const void* b,
                                                         size_t begin, size_t end, ElementParams p) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = begin + size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < end; i += stride)
    reduceElement<Tr, Op>(dst, a, b, i, p);
}

template <class Tr>
__global__ void __launch_bounds__(kThreads) convertKernel(void* dst, const void* src, size_t begin,
                                                          size_t end, ElementParams p) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = begin + size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < end; i += stride)
    convertElement<Tr>(dst, src, i, p);
}

// One block row per segment (blockIdx.y). The segment is read from pinned
// host memory once per block, into shared memory.
template <class Tr, class Op>
__global__ void __launch_bounds__(kThreads) segmentKernel(const IpcSegment* table, ElementParams p) {
  // IpcSegment has default initializers, which __shared__ variables may not.
  __shared__ uint4 raw[(sizeof(IpcSegment) + 15) / 16];
  IpcSegment& seg = *reinterpret_cast<IpcSegment*>(raw);
  if (threadIdx.x == 0) memcpy(raw, &table[blockIdx.y], sizeof(IpcSegment));
  __syncthreads();
  if (seg.nsrc == 0 || seg.ndst == 0) return;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t first = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (seg.op == IpcSegment::Copy) {
    // Copies move bytes, 16 at a time where every side allows it.
    uintptr_t bits = uintptr_t(seg.src[0]) | uintptr_t(seg.count);
    for (uint32_t d = 0; d < seg.ndst; ++d) bits |= uintptr_t(seg.dst[d]);
    if ((bits & 15) == 0) {
      const auto* src = static_cast<const uint4*>(seg.src[0]);
      for (size_t i = first; i < seg.count / 16; i += stride) {
        const uint4 v = src[i];
        for (uint32_t d = 0; d < seg.ndst; ++d) static_cast<uint4*>(seg.dst[d])[i] = v;
      }
      return;
    }
    const auto* src = static_cast<const unsigned char*>(seg.src[0]);
    for (size_t i = first; i < seg.count; i += stride) {
      const unsigned char v = src[i];
      for (uint32_t d = 0; d < seg.ndst; ++d) static_cast<unsigned char*>(seg.dst[d])[i] = v;
    }
    return;
  }
  for (size_t i = first; i < seg.count; i += stride) {
    auto acc = loadElement<Tr>(seg.src[0], true, i, p);
    for (uint32_t s = 1; s < seg.nsrc; ++s) acc = Op::apply(acc, loadElement<Tr>(seg.src[s], true, i, p));
    for (uint32_t d = 0; d < seg.ndst; ++d) storeElement<Tr>(seg.dst[d], true, i, acc, p);
  }
}

__global__ void spinWaitKernel(const volatile uint64_t* flag, uint64_t ticket) {
  while (*flag < ticket) {
#if defined(HCL_GPU_HIP)
    __builtin_amdgcn_s_sleep(8);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(1000);
#endif
  }
#ifdef HCL_GPU_HIP
  __threadfence_system();
#else
  __threadfence_system();
#endif
}

unsigned blocksFor(size_t n) {
  const size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < kMaxBlocks ? b : kMaxBlocks);
}

gpuError_t lastLaunchError() {
#ifdef HCL_GPU_HIP
  return hipGetLastError();
#else
  return cudaGetLastError();
#endif
}

template <class Tr, class Op>
gpuError_t reduceAs(void* dst, const void* a, const void* b, size_t begin, size_t end,
                    const ElementParams& p, gpuStream_t stream) {
  reduceKernel<Tr, Op><<<blocksFor(end - begin), kThreads, 0, stream>>>(dst, a, b, begin, end, p);
  return lastLaunchError();
}

// Calls fn.template operator()<Op>() for the element operator of `kind`
// (Avg and PreMulSum add; their extra steps are in ElementParams).
template <class Fn>
gpuError_t withOp(ReduceKind kind, Fn&& fn) {
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Avg:
    case ReduceKind::PreMulSum: return fn.template operator()<OpAdd>();
    case ReduceKind::Prod: return fn.template operator()<OpMul>();
    case ReduceKind::Max: return fn.template operator()<OpMax>();
    case ReduceKind::Min: return fn.template operator()<OpMin>();
  }
#ifdef HCL_GPU_HIP
  return hipErrorInvalidValue;
#else
  return cudaErrorInvalidValue;
#endif
}

template <class Tr, class Op>
gpuError_t segmentsAs(const IpcSegment* table, size_t n, size_t width, const ElementParams& p,
                      gpuStream_t stream) {
  // Blocks along x cover the widest segment; the kernel strides beyond.
  const dim3 grid(blocksFor(width == 0 ? 1 : width), unsigned(n));
  segmentKernel<Tr, Op><<<grid, kThreads, 0, stream>>>(table, p);
  return lastLaunchError();
}

template <class Tr>
gpuError_t convertAs(void* dst, const void* src, size_t begin, size_t end, const ElementParams& p,
                     gpuStream_t stream) {
  convertKernel<Tr><<<blocksFor(end - begin), kThreads, 0, stream>>>(dst, src, begin, end, p);
  return lastLaunchError();
}

// Calls fn.template operator()<Traits>() for the traits of `type`.
template <class Fn>
gpuError_t withTraits(hclDataType_t type, Fn&& fn) {
  switch (type) {
    case hclInt8: return fn.template operator()<DirectType<int8_t>>();
    case hclUint8: return fn.template operator()<DirectType<uint8_t>>();
    case hclInt32: return fn.template operator()<DirectType<int32_t>>();
    case hclUint32: return fn.template operator()<DirectType<uint32_t>>();
    case hclInt64: return fn.template operator()<DirectType<int64_t>>();
    case hclUint64: return fn.template operator()<DirectType<uint64_t>>();
    case hclFloat32: return fn.template operator()<DirectType<float>>();
    case hclFloat64: return fn.template operator()<DirectType<double>>();
    case hclFloat16: return fn.template operator()<HalfType>();
    case hclBfloat16: return fn.template operator()<Bf16Type>();
    case hclFloat8e4m3: return fn.template operator()<E4m3Type>();
    case hclFloat8e5m2: return fn.template operator()<E5m2Type>();
    default: break;
  }
#ifdef HCL_GPU_HIP
  return hipErrorInvalidValue;
#else
  return cudaErrorInvalidValue;
#endif
}

template <class Kernel>
gpuError_t loadKernel(Kernel* k) {
#ifdef HCL_GPU_HIP
  hipFuncAttributes attr;
  return hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(k));
#else
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, k);
#endif
}

}  // namespace

gpuError_t preloadKernels() {
  gpuError_t first = gpuSuccess;
  auto note = [&](gpuError_t e) {
    if (first == gpuSuccess) first = e;
  };
  for (int t = 0; t < hclNumTypes; ++t)
    note(withTraits(hclDataType_t(t), [&]<class Tr>() {
      note(loadKernel(reduceKernel<Tr, OpAdd>));
      note(loadKernel(reduceKernel<Tr, OpMul>));
      note(loadKernel(reduceKernel<Tr, OpMax>));
      note(loadKernel(reduceKernel<Tr, OpMin>));
      note(loadKernel(segmentKernel<Tr, OpAdd>));
      note(loadKernel(segmentKernel<Tr, OpMul>));
      note(loadKernel(segmentKernel<Tr, OpMax>));
      note(loadKernel(segmentKernel<Tr, OpMin>));
      return loadKernel(convertKernel<Tr>);
    }));
  note(loadKernel(spinWaitKernel));
  return first;
}

gpuError_t launchReduce(hclDataType_t type, ReduceKind kind, void* dst, const void* a, const void* b,
                        size_t begin, size_t end, const ElementParams& p, gpuStream_t stream) {
  if (end <= begin) return gpuSuccess;
  return withTraits(type, [&]<class Tr>() {
    return withOp(kind, [&]<class Op>() { return reduceAs<Tr, Op>(dst, a, b, begin, end, p, stream); });
  });
}

gpuError_t launchConvert(hclDataType_t type, void* dst, const void* src, size_t begin, size_t end,
                         const ElementParams& p, gpuStream_t stream) {
  if (end <= begin) return gpuSuccess;
  return withTraits(type, [&]<class Tr>() { return convertAs<Tr>(dst, src, begin, end, p, stream); });
}

gpuError_t launchSegments(hclDataType_t type, ReduceKind kind, const IpcSegment* table, size_t n, size_t width,
                          const ElementParams& p, gpuStream_t stream) {
  if (n == 0) return gpuSuccess;
  return withTraits(type, [&]<class Tr>() {
    return withOp(kind, [&]<class Op>() { return segmentsAs<Tr, Op>(table, n, width, p, stream); });
  });
}

gpuError_t launchSpinWait(const volatile uint64_t* flag, uint64_t ticket, gpuStream_t stream) {
  spinWaitKernel<<<1, 1, 0, stream>>>(flag, ticket);
  return lastLaunchError();
}

}  // namespace hcl::gpu
