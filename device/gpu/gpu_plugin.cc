// The plugin's only exported symbol (see plugin.map).
#include <cstdio>
#include <new>

#include "device/device.h"
#include "device/gpu/gpu_runtime.h"

extern "C" __attribute__((visibility("default"))) hcl::DeviceRuntime* hclDeviceRuntimeCreate(int abi, char* error,
                                                                                            size_t errorLen) {
  if (abi != hcl::kDevicePluginAbi) {
    if (error && errorLen)
      std::snprintf(error, errorLen, "%s plugin: built for device plugin ABI %d, HCL asked for %d",
                    hcl::gpu::kRuntimeName, hcl::kDevicePluginAbi, abi);
    return nullptr;
  }
  // A new runtime, owned by the caller (HCL keeps one for the life of the process).
  return new (std::nothrow) hcl::gpu::GpuRuntime();
}
