// Finds and opens a device plugin. Search order: $HCL_PLUGIN_DIR, the
// directory of the library (or program) that holds HCL, the build tree's
// output directory, then the dynamic loader's own search path.
#pragma once

#include "device/device.h"

namespace hcl {

Status loadDevicePlugin(const char* fileName, DeviceRuntime** out);

}  // namespace hcl
