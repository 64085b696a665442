// Ranks in one process (hclCommInitAll, or threads calling hclCommInitRank):
// the receiver copies straight from the sender's buffer, one memcpy.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeLocalTransport();

}  // namespace hcl
