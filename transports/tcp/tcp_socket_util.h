// Small helpers shared by the TCP listener, connector and streams.
#pragma once

#include <asio/ip/tcp.hpp>
#include <cstdint>
#include <string>

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

}  // namespace hcl::tcp
