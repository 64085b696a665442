// Kernel launches, callable from host code compiled by the C++ compiler.
// Launches are asynchronous on `stream`; the return value is the launch error.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/reduce/reduce.h"
#include "device/device.h"
#include "device/gpu/gpu_api.h"
#include "device/gpu/gpu_numerics.h"

namespace hcl::gpu {

// dst[i] = combine(a[i], b[i]) for i in [begin, end), per the contract of
// hcl::reduce; forms and the PreMulSum/Avg steps come in `p`.
gpuError_t launchReduce(hclDataType_t type, ReduceKind kind, void* dst, const void* a, const void* b,
                        size_t begin, size_t end, const ElementParams& p, gpuStream_t stream);

// dst[i] = convert(src[i]) for i in [begin, end); src's form is p.aNative.
gpuError_t launchConvert(hclDataType_t type, void* dst, const void* src, size_t begin, size_t end,
                         const ElementParams& p, gpuStream_t stream);

// Runs the IPC segments of `table` (pinned host memory, read when the
// kernel runs) on `stream`; see IpcSegment in device/device.h.
gpuError_t launchSegments(hclDataType_t type, ReduceKind kind, const IpcSegment* table, size_t n, size_t width,
                          const ElementParams& p, gpuStream_t stream);

// Loads every kernel of the plugin now. With lazy module loading (CUDA's
// default) a first launch may wait for the whole context to go idle, which
// never happens while a StreamGate holds a stream for work that launches it.
gpuError_t preloadKernels();

// A single thread that spins until *flag >= ticket (the StreamGate fallback
// when the runtime cannot wait on a memory value).
gpuError_t launchSpinWait(const volatile uint64_t* flag, uint64_t ticket, gpuStream_t stream);

}  // namespace hcl::gpu
