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
  return kind == kindOf(request.choice);
}

Status checkRequestedNet(const NetRequest& request, const PeerInfo& self, const std::vector<Link>& links) {
  if (request.choice == NetChoice::Any) return {};
  const TransportKind wanted = kindOf(request.choice);
  for (size_t peer = 0; peer < links.size(); ++peer) {
    if (static_cast<int>(peer) == self.rank) continue;
    const Link& link = links[peer];
    if (!isNetwork(link.kind)) continue;
    if (wanted == TransportKind::NetPlugin && self.netPlugin.empty()) {
      return systemError(fmt::format("rank {}: {}='{}' names a net plugin, and none is loaded (HCL_NET_PLUGIN or "
                                     "NCCL_NET_PLUGIN names its library; unset, libnccl-net.so is tried)",
                                     self.rank, request.variable, request.name));
    }
    if (link.kind != wanted) {
      return systemError(fmt::format("rank {}: {}='{}', but the link to rank {} can only take {} ({})", self.rank,
                                     request.variable, request.name, peer, networkName(link.kind), link.reason));
    }
    if (wanted == TransportKind::NetPlugin && !sameName(self.netPlugin, request.name)) {
      return systemError(fmt::format("rank {}: {}='{}', but the net plugin loaded is '{}'", self.rank,
                                     request.variable, request.name, self.netPlugin));
    }
  }
  return {};
}

}  // namespace hcl
