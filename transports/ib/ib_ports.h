// The verbs ports of this host: devices opened once per process (never
// closed, as NCCL keeps its own), each with one protection domain, and
// the attributes of every active port that setup and link selection use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "transports/ib/ib_net.h"
#include "transports/ib/verbs_api.h"

namespace hcl::ib {

struct IbPort {
  IbPortSummary summary;
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  uint8_t port = 1;
  ibv_mtu mtu = IBV_MTU_1024;
  uint16_t lid = 0;
  int gidIndex = 0;
  ibv_gid gid{};
  size_t maxMessageBytes = 0;
  int maxQpWr = 0;
};

// Active ports the filter admits, in device order. Fails with a text that
// says what was found where none can be used.
Status findIbPorts(const VerbsApi& verbs, const IbSettings& settings, std::vector<IbPort>& out);

// Mbit/s from the port's speed and width codes; 0 for codes not known.
uint32_t portSpeedMbps(uint32_t activeSpeed, uint32_t activeWidth);

// The fabric label of a port as verbs see it: IB ports on one subnet
// share one; RoCE ports with an IPv4 GID "roce" (publishedFabric() narrows
// it to their IP network), others one of their GID's own.
std::string fabricOf(bool ethernet, const ibv_gid& gid);

}  // namespace hcl::ib
