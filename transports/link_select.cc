#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "transports/link.h"

namespace hcl {
namespace {

// Returns the network prefix of `ip` (v4 or v6) masked to prefixLen bits as
// text, or "" when the address does not parse.
std::string subnetOf(const std::string& ip, int prefixLen) {
  std::array<uint8_t, 16> bytes{};
  int family = AF_INET;
  size_t len = 4;
  if (inet_pton(AF_INET, ip.c_str(), bytes.data()) != 1) {
    if (inet_pton(AF_INET6, ip.c_str(), bytes.data()) != 1) return "";
    family = AF_INET6;
    len = 16;
  }
  int bits = std::clamp(prefixLen, 0, static_cast<int>(len * 8));
  for (size_t i = 0; i < len; ++i) {
    int keep = std::clamp(bits - static_cast<int>(i * 8), 0, 8);
    bytes[i] &= static_cast<uint8_t>(0xff00 >> keep);
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes.data(), text, sizeof text);
  return std::string(text) + "/" + std::to_string(bits);
}

// Picks the listener address of `acceptor` that `connector` should use: the
// first interface of the acceptor on a subnet the connector also has,
// otherwise the acceptor's first address.
Link tcpLink(const PeerInfo& connector, const PeerInfo& acceptor, std::string why) {
  Link link;
  link.kind = TransportKind::Tcp;
  if (acceptor.addresses.empty()) {
    link.listenerAddress = -1;
    link.reason = why + "; peer published no address";
    return link;
  }
  for (size_t i = 0; i < acceptor.addresses.size(); ++i) {
    const auto& a = acceptor.addresses[i];
    const std::string net = subnetOf(a.ip, a.prefixLen);
    for (const auto& c : connector.addresses) {
      if (!net.empty() && net == subnetOf(c.ip, a.prefixLen)) {
        link.listenerAddress = static_cast<int>(i);
        link.reason = why + ", shared subnet " + net + " (" + a.ifname + ")";
        return link;
      }
    }
  }
  link.listenerAddress = 0;
  link.reason = why + ", no shared subnet: using " + acceptor.addresses[0].ifname;
  return link;
}

}  // namespace

Link selectLink(const PeerInfo& a, const PeerInfo& b) {
  const bool sameHost = a.hostId == b.hostId;
  const bool shmAllowed = a.shmEnabled && b.shmEnabled;
  const bool sameProcess = sameHost && a.pid == b.pid && a.processToken == b.processToken;
  if (sameProcess && shmAllowed) {
    return {TransportKind::Local, -1, "same process: direct memory access"};
  }
  if (sameHost && shmAllowed) {
    return {TransportKind::Shm, -1, "same host '" + a.hostId + "'"};
  }
  const PeerInfo& connector = a.rank < b.rank ? a : b;
  const PeerInfo& acceptor = a.rank < b.rank ? b : a;
  std::string why = sameHost ? "shared memory disabled (HCL_SHM_DISABLE)"
                             : "different hosts ('" + a.hostId + "', '" + b.hostId + "')";
  return tcpLink(connector, acceptor, why);
}

}  // namespace hcl
