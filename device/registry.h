// Where devices come from. The CPU and sim devices are built in; the CUDA
// and HIP runtimes are plugins (libhcl-cuda.so, libhcl-hip.so) loaded on
// first use, so a build without a GPU runtime still runs everywhere.
#pragma once

#include <string>
#include <string_view>

#include "device/device.h"

namespace hcl {

// HCL_DEVICE / hclSetDevice text: "auto", "cpu", or a GPU kind with an
// optional ordinal: "cuda", "cuda:1", "hip", "sim:0".
struct DeviceChoice {
  bool automatic = true;       // the first runtime with a device, else the CPU
  DeviceKind kind = DeviceKind::Cpu;
  int index = -1;              // -1: the runtime's current device
};
bool parseDeviceChoice(std::string_view text, DeviceChoice& out);
std::string toString(const DeviceChoice& c);

// The runtime of a GPU kind, loading its plugin on first use. Loading is
// tried once per process; a failure is remembered and returned again.
Status deviceRuntime(DeviceKind kind, DeviceRuntime** out);

// The device a choice names. "auto" never fails: it falls back to the CPU
// and says why in *note.
Status resolveDevice(const DeviceChoice& choice, Device** out, std::string* note);

}  // namespace hcl
