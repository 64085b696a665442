#include "device/gpu/gpu_runtime.h"

#include "device/gpu/gpu_status.h"

namespace hcl::gpu {

Status GpuRuntime::deviceCount(int* count) {
  *count = 0;
  int n = 0;
  const gpuError_t err = gpuGetDeviceCount(&n);
  const std::string rt = kRuntimeName;
  const std::string call = std::string(GPU_FN("GetDeviceCount")) + ": ";
  if (err == gpuErrorNoDevice || (err == gpuSuccess && n == 0)) {
    (void)gpuGetLastError();
    return systemError(rt + ": no " + rt + " device: " + call +
                       (err == gpuSuccess ? std::string("0 devices") : errorText(err)));
  }
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    return systemError(rt + ": no usable " + rt + " driver: " + call + errorText(err));
  }
  *count = n;
  return {};
}

Status GpuRuntime::currentDevice(int* index) {
  HCL_GPU_TRY(gpuGetDevice(index), GPU_FN("GetDevice"));
  return {};
}

Status GpuRuntime::device(int index, Device** out) {
  int n = 0;
  HCL_TRY(deviceCount(&n));
  if (index < 0 || index >= n)
    return invalidArgument(std::string(kRuntimeName) + ": device " + std::to_string(index) + " does not exist (" +
                           std::to_string(n) + " devices)");
  std::lock_guard lock(mutex_);
  if (devices_.size() < size_t(n)) devices_.resize(n);
  if (!devices_[index]) HCL_TRY(GpuDevice::create(index, devices_[index]));
  *out = devices_[index].get();
  return {};
}

int GpuRuntime::owner(const void* ptr) {
  if (!ptr) return -1;
  gpuPointerAttributes attr{};
  if (gpuPointerGetAttributes(&attr, ptr) != gpuSuccess) {
    (void)gpuGetLastError();
    return -1;
  }
  return gpuPointerIsDevice(attr) ? gpuPointerDevice(attr) : -1;
}

}  // namespace hcl::gpu
