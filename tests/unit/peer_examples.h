// PeerInfo examples for link-selection tests.
#pragma once

#include <string>

#include "core/peer_info.h"

namespace hcl::testing {

// A rank on `host` with one Ethernet NIC, eth0 at 10.0.0.<rank + 1>/24 on
// fabric "eth", and nothing else published.
inline PeerInfo peerOnEthernet(int rank, const std::string& host) {
  PeerInfo p;
  p.rank = rank;
  p.hostId = host;
  p.pid = 100 + rank;
  NetAddress a;
  a.ifname = "eth0";
  a.ip = "10.0.0." + std::to_string(rank + 1);
  a.port = 4000;
  a.prefixLen = 24;
  a.fabric = "eth";
  p.addresses.push_back(a);
  return p;
}

}  // namespace hcl::testing
