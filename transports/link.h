// Link selection: one pure function of two peers' published facts, so both
// ends of a pair always agree on the transport and on the NIC pair.
#pragma once

#include <string>

#include "core/peer_info.h"
#include "transports/transport.h"

namespace hcl {

struct Link {
  TransportKind kind = TransportKind::Tcp;
  // For TCP: index into the higher-ranked peer's addresses (the lower rank
  // connects to the higher rank's listener), and the lower rank's own NIC on
  // the same fabric; -1 otherwise.
  int listenerAddress = -1;
  int connectorAddress = -1;
  // For libfabric: the index into each end's ofiEndpoints (the lower rank's
  // first); -1 otherwise.
  int connectorOfiEndpoint = -1;
  int listenerOfiEndpoint = -1;
  std::string fabric;  // the shared fabric label; empty for local and shm
  NicKind nicKind = NicKind::Ethernet;
  uint32_t speedMbps = 0;  // the slower NIC of the pair; 0: unknown
  // What the cost model prices: "local", "shm", or "net:<fabric>".
  std::string linkClass;
  std::string reason;  // "same process", "same host 'h1'", "different hosts, fabric 'ib0' ..."
};

// a and b are the two peers; the result does not depend on their order.
Link selectLink(const PeerInfo& a, const PeerInfo& b);

}  // namespace hcl
