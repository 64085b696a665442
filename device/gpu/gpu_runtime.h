// The DeviceRuntime of the CUDA or HIP plugin.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "device/device.h"
#include "device/gpu/gpu_device.h"

namespace hcl::gpu {

class GpuRuntime final : public DeviceRuntime {
 public:
  DeviceKind kind() const override { return kKind; }
  Status deviceCount(int* count) override;
  Status currentDevice(int* index) override;
  Status device(int index, Device** out) override;
  int owner(const void* ptr) override;

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<GpuDevice>> devices_;  // by ordinal, created on first use
};

}  // namespace hcl::gpu
