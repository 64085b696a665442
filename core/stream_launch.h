// Launches of one communicator on one device-runtime stream (wrapped as a
// GatedStream). The call returns at once; the stream runs it in its order. Everything the launch copies on the device is put on the caller's
// streams when the call is made, and HCL's worker only runs the network side
// and releases tickets: a stream stopped on a wait can hold back every other
// stream sharing its hardware queue, so the worker must never need a device
// queue of its own while one waits (docs/devices.md).
#pragma once

#include <vector>

#include "core/group.h"

namespace hcl {

// Whether every operation of the launch is of one communicator, on one
// device-runtime stream. Other launches on such streams (several streams or
// communicators in one group) still run as one job on HCL's worker while the
// streams wait (core/group.cc).
bool onDeviceStream(const std::vector<PendingOp>& ops);

// Puts such a launch on its stream.
Status launchOnDeviceStream(std::vector<PendingOp> ops);

}  // namespace hcl
