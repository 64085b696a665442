// Pieces of the sim device shared between its files.
#pragma once

#include <memory>

#include "device/device.h"
#include "device/sim/sim_device.h"
#include "device/sim/sim_memory.h"

namespace hcl::sim {

std::unique_ptr<CopyQueue> makeCopyQueue(const MemoryMap& memory);
std::unique_ptr<StreamGate> makeGate(NativeStream& stream, const MemoryMap& memory);
// A gate that owns its stream.
std::unique_ptr<StreamGate> makeOwningGate(std::unique_ptr<NativeStream> stream, const MemoryMap& memory);

}  // namespace hcl::sim
