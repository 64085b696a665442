// Launches whose operations are all on device-runtime streams (each wrapped
// as a GatedStream). The call returns at once; the streams run it in their
// order. Everything the launch copies on the device is put on the caller's
// streams when the call is made, and HCL's worker only runs the network side
// and releases tickets: a stream stopped on a wait can hold back every other
// stream sharing its hardware queue, so the worker must never need a device
// queue of its own while one waits (docs/devices.md).
#pragma once

#include <vector>

#include "core/group.h"

namespace hcl {

// Whether every operation of the launch is on a device-runtime stream.
bool onDeviceStreams(const std::vector<PendingOp>& ops);

// Puts such a launch on its streams.
Status launchOnDeviceStreams(std::vector<PendingOp> ops);

}  // namespace hcl
