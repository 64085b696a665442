// One spelling for the CUDA and HIP runtime APIs, so that the GPU plugin has a
// single set of sources. HCL_GPU_HIP selects HIP; CUDA otherwise.
#pragma once

#include <cstdint>

#include "core/peer_info.h"

#ifdef HCL_GPU_HIP
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>

#define HCL_GPU_PREFIX "hip"
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuPointerAttributes = hipPointerAttribute_t;
inline constexpr gpuError_t gpuSuccess = hipSuccess;
inline constexpr gpuError_t gpuErrorNotReady = hipErrorNotReady;
inline constexpr gpuError_t gpuErrorNoDevice = hipErrorNoDevice;
inline constexpr gpuError_t gpuErrorInsufficientDriver = hipErrorInsufficientDriver;
#define gpuGetErrorString hipGetErrorString
#define gpuGetErrorName hipGetErrorName
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuHostGetDevicePointer hipHostGetDevicePointer
#define gpuHostAllocPortable hipHostMallocPortable
#define gpuHostAllocMapped hipHostMallocMapped
#define gpuPointerGetAttributes hipPointerGetAttributes
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpy2DAsync hipMemcpy2DAsync
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventBlockingSync hipEventBlockingSync
#define gpuEventRecord hipEventRecord
#define gpuEventQuery hipEventQuery
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventDestroy hipEventDestroy
#define gpuDeviceGetPCIBusId hipDeviceGetPCIBusId
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpy hipMemcpy
#define gpuDeviceSynchronize hipDeviceSynchronize
using gpuIpcMemHandle_t = hipIpcMemHandle_t;
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
inline int gpuPointerIsDevice(const gpuPointerAttributes& a) { return a.memoryType == hipMemoryTypeDevice; }
inline int gpuPointerDevice(const gpuPointerAttributes& a) { return a.device; }

namespace hcl::gpu {
inline constexpr DeviceKind kKind = DeviceKind::Hip;
inline constexpr const char* kVendor = "hip";
inline constexpr const char* kRuntimeName = "HIP";
}  // namespace hcl::gpu

#else  // CUDA

#include <cuda_runtime_api.h>

#define HCL_GPU_PREFIX "cuda"
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuPointerAttributes = cudaPointerAttributes;
inline constexpr gpuError_t gpuSuccess = cudaSuccess;
inline constexpr gpuError_t gpuErrorNotReady = cudaErrorNotReady;
inline constexpr gpuError_t gpuErrorNoDevice = cudaErrorNoDevice;
inline constexpr gpuError_t gpuErrorInsufficientDriver = cudaErrorInsufficientDriver;
#define gpuGetErrorString cudaGetErrorString
#define gpuGetErrorName cudaGetErrorName
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc cudaHostAlloc
#define gpuFreeHost cudaFreeHost
#define gpuHostGetDevicePointer cudaHostGetDevicePointer
#define gpuHostAllocPortable cudaHostAllocPortable
#define gpuHostAllocMapped cudaHostAllocMapped
#define gpuPointerGetAttributes cudaPointerGetAttributes
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpy2DAsync cudaMemcpy2DAsync
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventBlockingSync cudaEventBlockingSync
#define gpuEventRecord cudaEventRecord
#define gpuEventQuery cudaEventQuery
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventDestroy cudaEventDestroy
#define gpuDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpy cudaMemcpy
#define gpuDeviceSynchronize cudaDeviceSynchronize
using gpuIpcMemHandle_t = cudaIpcMemHandle_t;
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
inline int gpuPointerIsDevice(const gpuPointerAttributes& a) { return a.type == cudaMemoryTypeDevice; }
inline int gpuPointerDevice(const gpuPointerAttributes& a) { return a.device; }

namespace hcl::gpu {
inline constexpr DeviceKind kKind = DeviceKind::Cuda;
inline constexpr const char* kVendor = "cuda";
inline constexpr const char* kRuntimeName = "CUDA";
}  // namespace hcl::gpu

#endif

// The runtime's name for an API call: GPU_FN("Malloc") is "cudaMalloc" or "hipMalloc".
#define GPU_FN(name) HCL_GPU_PREFIX name
