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

// Sockets per pair: HCL_TCP_STREAMS, or where it is unset what NCCL's
// socket transport would open, HCL_SOCKET_NTHREADS x HCL_NSOCKS_PERTHREAD
// (NCCL_SOCKET_NTHREADS, at most 16 as in NCCL, and NCCL_NSOCKS_PERTHREAD);
// 1 to 64.
int tcpStreamsWanted();

}  // namespace hcl
