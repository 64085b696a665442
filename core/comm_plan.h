// Agreeing on a communicator's plan at init: rank 0 builds the link graph
// from every rank's published facts (and HCL_LINK_MODEL, and the probe),
// derives the rank groups, prices the algorithms, and sends the resulting
// plan table to every rank.
#pragma once

#include <memory>
#include <vector>

#include "collectives/plan/link_model.h"
#include "collectives/plan/plan.h"
#include "core/bootstrap.h"
#include "core/peer_info.h"
#include "core/status.h"
#include "transports/link.h"
#include "transports/transport.h"

namespace hcl {

// The cost of a link from its facts alone (NIC speed and kind).
LinkCost defaultLinkCost(const Link& link);

// Every pair's link class with default costs.
LinkGraph buildLinkGraph(const std::vector<PeerInfo>& peers);

// Whether rank 0 prices a plan table for these peers: up to 32 ranks
// always, up to 64 where they span several hosts; otherwise the registry's
// size rules decide (replay grows with the square of the rank count, and on
// one host the registry's measured choices decide anyway).
bool planWorthPricing(const std::vector<PeerInfo>& peers);
// One line per pair: transport, NICs, fabric, class and cost.
std::string describeLinkTable(const std::vector<PeerInfo>& peers, const LinkGraph& graph);

// The plan table as text: per collective, the size ranges and their choice.
std::string describePlanTable(const PlanTable& table);

// Collective over `oob`: true on every rank when every rank can reach every
// peer's memory over its links (Connection::peerMemoryAccess), so the direct
// algorithms are allowed. Off with HCL_DIRECT=0.
Status agreeOnPeerAccess(Oob& oob, const std::vector<const Connection*>& connections, bool& out);

// Collective over `oob`. Rank 0 builds the table with `planner` (applying
// HCL_LINK_MODEL and `measured` costs, if any) and every rank receives it.
// A bad HCL_LINK_MODEL fails init on every rank with the same message.
Status agreeOnPlan(Oob& oob, const std::vector<PeerInfo>& peers, const Planner& planner, size_t chunkBytes,
                   const std::vector<LinkModelRule>& measured, std::shared_ptr<const PlanTable>& out);

}  // namespace hcl
