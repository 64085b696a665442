#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include "transports/link.h"

namespace hcl {
namespace {

struct Candidate {
  int acceptorIndex = -1;
  int connectorIndex = -1;
  NicKind kind = NicKind::Ethernet;
  uint32_t speedMbps = 0;

  // Preference order: RDMA, then speed, then NIC kind; then the lowest
  // indices, so equal candidates still give one answer.
  bool betterThan(const Candidate& o, const std::string& fabric, const std::string& otherFabric) const {
    const auto key = [](const Candidate& c) { return std::tuple(isRdma(c.kind), c.speedMbps, c.kind); };
    if (key(*this) != key(o)) return key(*this) > key(o);
    if (fabric != otherFabric) return fabric < otherFabric;
    return std::tie(acceptorIndex, connectorIndex) < std::tie(o.acceptorIndex, o.connectorIndex);
  }
};

uint32_t pairSpeed(uint32_t a, uint32_t b) {
  if (a == 0 || b == 0) return std::max(a, b);
  return std::min(a, b);
}

// An address both ranks publish while on different hosts (a container
// bridge such as 10.88.0.1 on every host) leads each back to itself, unless
// the two share one network stack (emulated hosts on one machine).
bool reachesOwnHost(const NetAddress& target, const PeerInfo& from, const PeerInfo& owner, bool sameHost) {
  if (sameHost || (!from.networkStack.empty() && from.networkStack == owner.networkStack)) return false;
  return std::any_of(from.addresses.begin(), from.addresses.end(),
                     [&](const NetAddress& own) { return own.ip == target.ip; });
}

std::optional<Candidate> bestSharedFabric(const PeerInfo& connector, const PeerInfo& acceptor, bool sameHost) {
  std::optional<Candidate> best;
  for (size_t i = 0; i < acceptor.addresses.size(); ++i) {
    const NetAddress& a = acceptor.addresses[i];
    if (a.fabric.empty() || reachesOwnHost(a, connector, acceptor, sameHost)) continue;
    for (size_t j = 0; j < connector.addresses.size(); ++j) {
      const NetAddress& c = connector.addresses[j];
      if (c.fabric != a.fabric) continue;
      Candidate cand{static_cast<int>(i), static_cast<int>(j), std::min(a.kind, c.kind),
                     pairSpeed(a.speedMbps, c.speedMbps)};
      if (!best || cand.betterThan(*best, a.fabric,
                                   acceptor.addresses[static_cast<size_t>(best->acceptorIndex)].fabric))
        best = cand;
    }
  }
  return best;
}

std::string describeSpeed(uint32_t mbps) {
  if (mbps == 0) return "speed unknown";
  if (mbps % 1000 == 0) return fmt::format("{} Gbit/s", mbps / 1000);
  return fmt::format("{} Mbit/s", mbps);
}

Link networkLink(const PeerInfo& connector, const PeerInfo& acceptor, bool sameHost, const std::string& why) {
  Link link;
  link.kind = TransportKind::Tcp;
  if (acceptor.addresses.empty()) {
    link.linkClass = "net:";
    link.reason = why + "; peer published no address";
    return link;
  }
  if (const auto best = bestSharedFabric(connector, acceptor, sameHost)) {
    const NetAddress& a = acceptor.addresses[static_cast<size_t>(best->acceptorIndex)];
    const NetAddress& c = connector.addresses[static_cast<size_t>(best->connectorIndex)];
    link.listenerAddress = best->acceptorIndex;
    link.connectorAddress = best->connectorIndex;
    link.fabric = a.fabric;
    link.nicKind = best->kind;
    link.speedMbps = best->speedMbps;
    link.linkClass = "net:" + a.fabric;
    link.reason = fmt::format("{}, fabric '{}' ({}, {}): rank {} {} -> rank {} {}", why, a.fabric,
                              toString(best->kind), describeSpeed(best->speedMbps), connector.rank,
                              c.ifname, acceptor.rank, a.ifname);
    return link;
  }
  const auto first = std::find_if(acceptor.addresses.begin(), acceptor.addresses.end(),
                                  [&](const NetAddress& a) { return !reachesOwnHost(a, connector, acceptor, sameHost); });
  const size_t index = first == acceptor.addresses.end() ? 0 : static_cast<size_t>(first - acceptor.addresses.begin());
  const NetAddress& a = acceptor.addresses[index];
  link.listenerAddress = static_cast<int>(index);
  link.fabric = a.fabric;
  link.nicKind = a.kind;
  link.speedMbps = a.speedMbps;
  link.linkClass = "net:" + a.fabric;
  link.reason = fmt::format("{}, no shared fabric: trying rank {}'s {} ({})", why, acceptor.rank, a.ifname,
                            a.fabric);
  return link;
}

int endpointOn(const PeerInfo& p, int nic, const std::string& provider) {
  for (size_t e = 0; e < p.ofiEndpoints.size(); ++e) {
    if (p.ofiEndpoints[e].nic == nic && p.ofiEndpoints[e].provider == provider) return static_cast<int>(e);
  }
  return -1;
}

// The libfabric endpoints a network link takes, where both ends have one:
// those on the two NICs the link already chose (so libfabric follows the
// fabric choice), else two endpoints tied to no NIC (EFA, shm) on one
// provider and fabric. The shm provider only within a host, and not between
// endpoints of one process (libfabric 1.17's crashes a sender whose receiver
// there closes).
bool chooseOfiEndpoints(const PeerInfo& connector, const PeerInfo& acceptor, bool sameHost, bool sameProcess,
                        Link& link) {
  for (size_t c = 0; c < connector.ofiEndpoints.size(); ++c) {
    const OfiEndpointInfo& ce = connector.ofiEndpoints[c];
    if (ce.nic < 0 || ce.nic != link.connectorAddress || link.listenerAddress < 0) continue;
    const int a = endpointOn(acceptor, link.listenerAddress, ce.provider);
    if (a < 0 || acceptor.ofiEndpoints[static_cast<size_t>(a)].fabric != ce.fabric) continue;
    link.connectorOfiEndpoint = static_cast<int>(c);
    link.listenerOfiEndpoint = a;
    return true;
  }
  for (size_t c = 0; c < connector.ofiEndpoints.size(); ++c) {
    const OfiEndpointInfo& ce = connector.ofiEndpoints[c];
    if (ce.nic >= 0 || (ce.provider == "shm" && (!sameHost || sameProcess))) continue;
    for (size_t a = 0; a < acceptor.ofiEndpoints.size(); ++a) {
      const OfiEndpointInfo& ae = acceptor.ofiEndpoints[a];
      if (ae.nic >= 0 || ae.provider != ce.provider || ae.fabric != ce.fabric) continue;
      link.connectorOfiEndpoint = static_cast<int>(c);
      link.listenerOfiEndpoint = static_cast<int>(a);
      return true;
    }
  }
  return false;
}

// The first fabric (in sorted order) where both ranks opened verbs ports.
std::string sharedIbFabric(const PeerInfo& a, const PeerInfo& b) {
  for (const std::string& f : a.ibFabrics) {
    if (std::find(b.ibFabrics.begin(), b.ibFabrics.end(), f) != b.ibFabrics.end()) return f;
  }
  return {};
}

}  // namespace

Link selectLink(const PeerInfo& a, const PeerInfo& b) {
  const bool sameHost = a.hostId == b.hostId;
  const bool shmAllowed = a.shmEnabled && b.shmEnabled;
  const bool sameProcess = sameHost && a.pid == b.pid && a.processToken == b.processToken;
  if (sameProcess && shmAllowed) {
    Link link;
    link.kind = TransportKind::Local;
    link.linkClass = "local";
    link.reason = "same process: direct memory access";
    return link;
  }
  if (sameHost && shmAllowed) {
    Link link;
    link.kind = TransportKind::Shm;
    link.linkClass = "shm";
    link.reason = "same host '" + a.hostId + "'";
    return link;
  }
  const PeerInfo& connector = a.rank < b.rank ? a : b;
  const PeerInfo& acceptor = a.rank < b.rank ? b : a;
  const std::string why = sameHost ? "shared memory disabled (HCL_SHM_DISABLE)"
                                   : "different hosts ('" + a.hostId + "', '" + b.hostId + "')";
  Link link = networkLink(connector, acceptor, sameHost, why);
  // An NCCL net plugin both loaded goes first, as NCCL puts one before its
  // internal networks.
  if (!connector.netPlugin.empty() && connector.netPlugin == acceptor.netPlugin) {
    link.kind = TransportKind::NetPlugin;
    // Priced at the plugin's devices' speed where both know it (an IB or
    // EFA device, not the IP interface the fabric label came from).
    if (connector.netPluginSpeedMbps > 0 && acceptor.netPluginSpeedMbps > 0) {
      link.speedMbps = std::min(connector.netPluginSpeedMbps, acceptor.netPluginSpeedMbps);
    }
    // A class of its own: the cost model keeps one cost per class, and TCP
    // pairs on the same fabric are priced differently.
    link.linkClass += "+plugin:" + connector.netPlugin;
    link.reason += fmt::format("; NCCL net plugin '{}' ({})", connector.netPlugin, describeSpeed(link.speedMbps));
    return link;
  }
  // HCL's own verbs where both opened ports on one fabric, before
  // libfabric (whose verbs provider would reach the same ports).
  if (const std::string fabric = sharedIbFabric(connector, acceptor); !fabric.empty()) {
    link.kind = TransportKind::Ib;
    link.nicKind = fabric.starts_with("roce") ? NicKind::Roce : NicKind::Ib;
    link.speedMbps = pairSpeed(connector.ibSpeedMbps, acceptor.ibSpeedMbps);
    link.linkClass = "verbs:" + fabric;
    link.reason += fmt::format("; verbs on fabric '{}' ({})", fabric, describeSpeed(link.speedMbps));
    return link;
  }
  if (chooseOfiEndpoints(connector, acceptor, sameHost, sameProcess, link)) {
    const OfiEndpointInfo& e = connector.ofiEndpoints[static_cast<size_t>(link.connectorOfiEndpoint)];
    link.kind = TransportKind::Ofi;
    link.reason += fmt::format("; libfabric provider '{}', fabric '{}'", e.provider, e.fabric);
  }
  return link;
}

}  // namespace hcl
