// Small helpers shared by the TCP listener, connector and streams.
#pragma once

#include <asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/netif.h"
#include "core/params.h"

namespace hcl::tcp {

// "10.0.0.2:41233" or "[fd00::2]:41233".
std::string formatEndpoint(const asio::ip::tcp::endpoint& endpoint);
std::string formatHostPort(const std::string& ip, uint16_t port);

// Applies HCL_TCP_BUFFER_BYTES (when positive) as SO_SNDBUF and SO_RCVBUF.
// Works on sockets and acceptors (accepted sockets inherit the sizes);
// failures are ignored, the kernel defaults are fine too.
template <typename SocketLike>
void applyBufferSizes(SocketLike& socket) {
  const int64_t bytes = paramInt("HCL_TCP_BUFFER_BYTES");
  if (bytes <= 0) return;
  const int size = bytes > INT32_MAX ? INT32_MAX : static_cast<int>(bytes);
  asio::error_code ignored;
  socket.set_option(asio::socket_base::send_buffer_size(size), ignored);
  socket.set_option(asio::socket_base::receive_buffer_size(size), ignored);
}

// True when `address` is a loopback address or one of `interfaces` (this
// host's, from listInterfaces()): a connection to it never leaves the machine.
bool isThisHostAddress(const asio::ip::address& address,
                       const std::vector<NetInterface>& interfaces);
// True when the peer of the connected `socket` is on this host.
bool isSameHostConnection(const asio::ip::tcp::socket& socket,
                          const std::vector<NetInterface>& interfaces);

// HCL_TCP_CONGESTION: the congestion control algorithms to try on a
// connection, in order; empty leaves the kernel's choice. "auto": a
// connection within this host gets cubic (reno where the kernel does not let
// this process choose cubic), because there is no network to share, and a
// pacing algorithm such as BBR holds a loopback flow far below what the CPUs
// can move; connections to other hosts keep the kernel's default. "system":
// always the kernel's default. Any other value: that algorithm everywhere.
//
// The algorithm must be chosen before the connection is established: one
// that paces (BBR) leaves the socket paced even after a switch to one that
// does not. So connecting sockets get it before connect(), and listeners get
// what a same-host connection needs (accepted sockets inherit it); an
// accepted connection from another host is switched back to the kernel's
// default, which is always possible.
bool congestionIsAuto(std::string_view setting);
std::vector<std::string> congestionCandidates(std::string_view setting, bool sameHost);

// Sets the first of `candidates` the kernel accepts on socket `fd`
// (TCP_CONGESTION); `refused` gets "name: reason" for each one it refused.
// Returns false when none was accepted (true for no candidates).
bool applyCongestionControl(int fd, const std::vector<std::string>& candidates,
                            std::string* refused = nullptr);
// The algorithm socket `fd` uses; empty when it cannot be read.
std::string congestionInUse(int fd);

}  // namespace hcl::tcp
