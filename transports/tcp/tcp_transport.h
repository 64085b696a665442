// TCP transport: one socket per peer pair, the lower rank connecting to the
// higher rank's listener, messages framed as {tag, flags, bytes} + payload.
#pragma once

#include <memory>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeTcpTransport();

}  // namespace hcl
