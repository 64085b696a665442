// Which device a new communicator computes on: the calling thread's
// hclSetDevice choice, else HCL_DEVICE (like NCCL, which takes the current
// CUDA device at init).
#pragma once

#include "core/communicator.h"
#include "device/registry.h"

namespace hcl {

void setThreadDeviceChoice(const DeviceChoice& choice);
DeviceChoice currentDeviceChoice();
// Resolves the current choice into settings.device; a GPU ordinal in
// `index` (>= 0) overrides the runtime's current device.
Status chooseDevice(CommSettings& settings, int index = -1);

}  // namespace hcl
