// Link selection: one pure function of two peers' published facts, so both
// ends of a pair always agree on the transport.
#pragma once

#include <string>

#include "core/peer_info.h"
#include "transports/transport.h"

namespace hcl {

struct Link {
  TransportKind kind = TransportKind::Tcp;
  // For TCP: index into the higher-ranked peer's addresses (the lower rank
  // connects to the higher rank's listener); -1 otherwise.
  int listenerAddress = -1;
  std::string reason;  // "same process", "same host 'h1'", "different hosts, subnet 10.0.0.0/24"
};

// a and b are the two peers; the result does not depend on their order.
Link selectLink(const PeerInfo& a, const PeerInfo& b);

}  // namespace hcl
