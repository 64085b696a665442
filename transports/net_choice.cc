#include "transports/net_choice.h"

#include <fmt/format.h>
#include <strings.h>

#include "core/params.h"

namespace hcl {
namespace {

bool sameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool isNetwork(TransportKind kind) { return kind != TransportKind::Local && kind != TransportKind::Shm; }

std::string networkName(TransportKind kind) {
  switch (kind) {
    case TransportKind::Tcp: return "Socket (TCP)";
    case TransportKind::Ib: return "IB (verbs)";
    case TransportKind::Ofi: return "OFI (libfabric)";
    case TransportKind::NetPlugin: return "a net plugin";
    default: return "no network";
  }
}

TransportKind kindOf(NetChoice choice) {
  switch (choice) {
    case NetChoice::Ib: return TransportKind::Ib;
    case NetChoice::Ofi: return TransportKind::Ofi;
    case NetChoice::Plugin: return TransportKind::NetPlugin;
    default: return TransportKind::Tcp;
  }
}

}  // namespace

NetRequest parseNetRequest(std::string_view text, std::string variable) {
  NetRequest r;
  r.name = std::string(text);
  r.variable = std::move(variable);
  if (text.empty()) {
    r.choice = NetChoice::Any;
  } else if (sameName(text, "Socket") || sameName(text, "tcp")) {
    r.choice = NetChoice::Socket;
  } else if (sameName(text, "IB") || sameName(text, "verbs")) {
    r.choice = NetChoice::Ib;
  } else if (sameName(text, "OFI") || sameName(text, "libfabric")) {
    r.choice = NetChoice::Ofi;
  } else {
    r.choice = NetChoice::Plugin;
  }
  return r;
}

NetRequest readNetRequest() {
  const ParamValue value = resolveParam("HCL_NET");
  return parseNetRequest(value.text, value.origin.empty() ? "HCL_NET" : value.origin);
}

bool netRequestAllows(const NetRequest& request, TransportKind kind) {
  if (request.choice == NetChoice::Any || !isNetwork(kind)) return true;
  // aws-ofi-nccl calls itself "Libfabric", or "OFI" where NCCL_NET says so.
  if (kind == TransportKind::NetPlugin && request.choice == NetChoice::Ofi) return true;
  return kind == kindOf(request.choice);
}

namespace {

// Over the network the request names, or over a loaded net plugin of that
// very name.
bool takesRequested(const NetRequest& request, const PeerInfo& self, const Link& link) {
  if (link.kind == TransportKind::NetPlugin && !self.netPlugin.empty() && sameName(self.netPlugin, request.name)) {
    return true;
  }
  return request.choice != NetChoice::Plugin && link.kind == kindOf(request.choice);
}

// Why this rank itself cannot take the network, where that is the reason.
std::string ownShortfall(const NetRequest& request, const PeerInfo& self) {
  if (request.choice == NetChoice::Ib && self.ibFabrics.empty()) return "; this rank has no usable verbs port";
  if (request.choice == NetChoice::Ofi && self.ofiEndpoints.empty() && self.netPlugin.empty()) {
    return "; this rank opened no libfabric endpoint";
  }
  return {};
}

}  // namespace

Status checkRequestedNet(const NetRequest& request, const PeerInfo& self, const std::vector<Link>& links) {
  if (request.choice == NetChoice::Any) return {};
  for (size_t peer = 0; peer < links.size(); ++peer) {
    if (static_cast<int>(peer) == self.rank) continue;
    const Link& link = links[peer];
    if (!isNetwork(link.kind) || takesRequested(request, self, link)) continue;
    // As NCCL: a name that is no network is the caller's mistake.
    if (request.choice == NetChoice::Plugin && self.netPlugin.empty()) {
      return invalidUsage(fmt::format("rank {}: {}='{}' names no network of HCL's (Socket, IB, OFI) and no net "
                                      "plugin is loaded (HCL_NET_PLUGIN or NCCL_NET_PLUGIN names its library; "
                                      "unset, libnccl-net.so is tried)",
                                      self.rank, request.variable, request.name));
    }
    if (request.choice == NetChoice::Plugin) {
      return invalidUsage(fmt::format("rank {}: {}='{}' names no network of HCL's (Socket, IB, OFI), and the net "
                                      "plugin loaded is '{}'",
                                      self.rank, request.variable, request.name, self.netPlugin));
    }
    return systemError(fmt::format("rank {}: {}='{}', but the link to rank {} can only take {} ({}){}", self.rank,
                                   request.variable, request.name, peer, networkName(link.kind), link.reason,
                                   ownShortfall(request, self)));
  }
  return {};
}

Status checkRequestedNet(const NetRequest& request, const PeerInfo& self, const std::vector<PeerInfo>& peers,
                         const std::vector<Link>& links) {
  HCL_TRY(checkRequestedNet(request, self, links));
  for (size_t peer = 0; peer < links.size() && peer < peers.size(); ++peer) {
    const PeerInfo& other = peers[peer];
    if (static_cast<int>(peer) == self.rank || other.netName.empty() || !isNetwork(links[peer].kind)) continue;
    const NetRequest theirs = parseNetRequest(other.netName, other.netNameFrom);
    if (takesRequested(theirs, other, links[peer])) continue;
    return systemError(fmt::format("rank {}: rank {}'s {}='{}', but the link between them can only take {} ({})",
                                   self.rank, peer, theirs.variable, theirs.name, networkName(links[peer].kind),
                                   links[peer].reason));
  }
  return {};
}

}  // namespace hcl
