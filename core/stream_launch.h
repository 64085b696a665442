// Launches on device-runtime streams (wrapped as GatedStreams). The call
// returns at once; each stream runs it in its order. Everything the launch
// copies on the device is put on the caller's streams when the call is made, and HCL's worker only runs the network side
// and releases tickets: a stream stopped on a wait can hold back every other
// stream sharing its hardware queue, so the worker must never need a device
// queue of its own while one waits (docs/devices.md).
#pragma once

#include <vector>

#include "core/group.h"

namespace hcl {

// Whether every operation of the launch is on a device-runtime stream, and
// no two of its communicators are ranks of one communicator (one thread
// driving several ranks). Other launches run as one job on HCL's worker
// (core/group.cc).
bool onDeviceStreams(const std::vector<PendingOp>& ops);

// Puts such a launch on its streams: one launch per communicator, in the
// order of each one's first call, as NCCL does. A communicator's operations
// over several streams join them: the launch starts after the earlier work
// of every one of them, and their later work waits for all of it.
Status launchOnDeviceStreams(std::vector<PendingOp> ops);

}  // namespace hcl
