// A listening socket on one chosen interface, open from listen() to finish().
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/netif.h"
#include "core/peer_info.h"
#include "core/status.h"

namespace hcl::tcp {

struct TcpListener {
  explicit TcpListener(asio::io_context& io) : acceptor(io) {}
  asio::ip::tcp::acceptor acceptor;
  NetAddress address;  // as published, with the bound port
  // HCL_TCP_CONGESTION as read at listen(), and the kernel's default
  // algorithm, for accepted connections from other hosts (tcp_socket_util.h).
  std::string congestionSetting;
  std::string kernelCongestion;
  bool congestionRefused = false;  // warned about at listen()
};

// Opens an ephemeral-port listener on each interface; interfaces that cannot
// be bound are skipped with a warning. Fails when none could be opened.
Status openListeners(int rank, asio::io_context& io, const std::vector<NetInterface>& interfaces,
                     std::vector<std::unique_ptr<TcpListener>>& out);

}  // namespace hcl::tcp
