// Small helpers for the sockets HCL opens (the bootstrap's and TCP's).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <asio/error.hpp>
#include <cerrno>
#include <system_error>

namespace hcl {

// Descriptors HCL opens must not outlive this process in a child that
// another thread of the program starts with fork and exec: a link kept open
// there would hide this rank's death from its peers until their timeout.
// asio's sockets and accept() lack the flag, so these helpers set it.

// Opens an asio socket or acceptor close-on-exec from the start, with no
// window in which a fork could inherit it.
template <typename Socket, typename Protocol>
void openCloseOnExec(Socket& socket, const Protocol& protocol, std::error_code& ec) {
  const int fd = ::socket(protocol.family(), protocol.type() | SOCK_CLOEXEC, protocol.protocol());
  if (fd < 0) {
    ec = std::error_code(errno, asio::error::get_system_category());
    return;
  }
  socket.assign(protocol, fd, ec);
  if (ec) ::close(fd);
}

// Accepts one pending connection close-on-exec from the start (accept4), as
// openCloseOnExec opens sockets. Sets `ec` in asio's category, as asio's
// accept would: would_block when none is pending on a non-blocking acceptor.
template <typename Acceptor, typename Socket>
void acceptCloseOnExec(Acceptor& acceptor, Socket& socket, typename Acceptor::endpoint_type& peer,
                       std::error_code& ec) {
  peer = {};
  socklen_t length = static_cast<socklen_t>(peer.capacity());
  const int fd = ::accept4(acceptor.native_handle(), peer.data(), &length, SOCK_CLOEXEC);
  if (fd < 0) {
    ec = std::error_code(errno, asio::error::get_system_category());
    return;
  }
  peer.resize(length);
  socket.assign(peer.protocol(), fd, ec);
  if (ec) ::close(fd);
}

// Linux's accept() passes on the network errors of the connection it was
// about to return (accept(2) lists them for TCP); the listener itself is
// fine, so such an error, like a connection aborted before it was accepted
// or a signal, means: accept again.
inline bool acceptErrorIsTransient(const std::error_code& ec) {
  if (ec == asio::error::connection_aborted || ec == asio::error::interrupted) return true;
  if (ec.category() != asio::error::get_system_category()) return false;
  switch (ec.value()) {
    case ENETDOWN:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

// True when a connected socket's two ends are the same address and port:
// retrying a port nobody listens on can end connected to itself (TCP's
// simultaneous open), which is no link to the peer.
template <typename Socket>
bool isConnectedToItself(const Socket& socket) {
  std::error_code a, b;
  const auto local = socket.local_endpoint(a);
  const auto remote = socket.remote_endpoint(b);
  return !a && !b && local == remote;
}

}  // namespace hcl
