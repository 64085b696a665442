// Runtime error codes as hcl::Status, naming the call and the runtime's text.
#pragma once

#include <string>

#include "core/status.h"
#include "device/gpu/gpu_api.h"

namespace hcl::gpu {

inline std::string errorText(gpuError_t err) {
  const char* s = gpuGetErrorString(err);
  return std::string(s ? s : "unknown error") + " (code " + std::to_string(int(err)) + ")";
}

// "CUDA: cudaMalloc: out of memory (code 2)".
inline Status check(gpuError_t err, const char* call) {
  if (err == gpuSuccess) return {};
  return systemError(std::string(kRuntimeName) + ": " + call + ": " + errorText(err));
}

}  // namespace hcl::gpu

// HCL_GPU_TRY(gpuMalloc(&p, n), GPU_FN("Malloc")): returns the Status on failure.
#define HCL_GPU_TRY(expr, call) HCL_TRY(::hcl::gpu::check((expr), (call)))
