// TCP transport: HCL_TCP_STREAMS sockets per peer pair (the lower rank's
// choice), the lower rank connecting to the higher rank's listener, messages
// framed as {tag, flags, bytes} + payload and striped over the streams
// (tcp_stripe.h).
#pragma once

#include <memory>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeTcpTransport();
// With a fixed number of sockets to each higher-ranked peer instead of
// HCL_TCP_STREAMS (tests).
std::unique_ptr<Transport> makeTcpTransport(int streams);

}  // namespace hcl
