// HCL_NET (NCCL_NET): the one network that links between ranks may take,
// named as NCCL names its networks. Unset, a link takes the best network
// both of its ends have. Shared memory and ranks of one process are not
// networks and stay as they are.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/peer_info.h"
#include "core/status.h"
#include "transports/link.h"
#include "transports/net_request.h"

namespace hcl {

NetRequest parseNetRequest(std::string_view text, std::string variable);
// HCL_NET, or its alias NCCL_NET.
NetRequest readNetRequest();

// Whether a transport may carry links under the request; the transports
// left out are not opened.
bool netRequestAllows(const NetRequest& request, TransportKind kind);

// After link selection: every link between ranks that is a network link
// takes the network this rank requests, else an error that names the first
// peer whose link does not, and why it went where it did.
Status checkRequestedNet(const NetRequest& request, const PeerInfo& self, const std::vector<Link>& links);
// The same, and also every link takes the network its peer requests
// (peers[p].netName), so each end of a link that breaks either rule fails
// saying which rank asked for what.
Status checkRequestedNet(const NetRequest& request, const PeerInfo& self, const std::vector<PeerInfo>& peers,
                         const std::vector<Link>& links);

}  // namespace hcl
