// Ranks in different processes on one host: one shared segment per pair,
// copy-through FIFOs for small messages, process_vm_readv for large ones.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeShmTransport();

}  // namespace hcl
