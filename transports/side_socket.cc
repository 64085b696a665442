#include "transports/side_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hcl::side {
namespace {

bool setNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

// A host that dies without closing its sockets, or a side connection an
// idle firewall dropped, shows within about 20 s.
void keepAlive(int fd) {
  const int on = 1, idle = 10, interval = 2, count = 5;
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

int bindAnyAddress() {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    const int no = 0;
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    // IPv4 peers too, or the IPv4 socket below.
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no) == 0 &&
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      return fd;
    }
    ::close(fd);
  }
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  const int err = errno;
  ::close(fd);
  errno = err;
  return -1;
}

}  // namespace

Status openListener(const std::string& what, int* fd, uint16_t* port) {
  *fd = bindAnyAddress();
  if (*fd < 0) return errnoError(what + ": socket", errno);
  if (::listen(*fd, SOMAXCONN) != 0 || !setNonBlocking(*fd)) return errnoError(what, errno);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return errnoError(what + ": getsockname", errno);
  }
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                            : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return {};
}

Status startConnect(int family, const uint8_t* ip, uint16_t port, const std::string& where, int* fd,
                    bool* connected) {
  sockaddr_storage to{};
  socklen_t len = 0;
  if (family == 4) {
    auto& a = reinterpret_cast<sockaddr_in&>(to);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    std::memcpy(&a.sin_addr, ip, 4);
    len = sizeof a;
  } else {
    auto& a = reinterpret_cast<sockaddr_in6&>(to);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    std::memcpy(&a.sin6_addr, ip, 16);
    len = sizeof a;
  }
  *connected = false;
  *fd = ::socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0) return errnoError(where + ": socket", errno);
  const int one = 1;
  (void)setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  keepAlive(*fd);
  if (!setNonBlocking(*fd)) return errnoError(where + ": fcntl", errno);
  if (::connect(*fd, reinterpret_cast<sockaddr*>(&to), len) == 0) {
    *connected = true;
  } else if (errno != EINPROGRESS) {
    return errnoError(fmt::format("{}: connecting to port {}", where, port), errno);
  }
  return {};
}

Status startConnect(const std::string& ip, uint16_t port, const std::string& where, int* fd, bool* connected) {
  uint8_t bytes[16] = {};
  if (inet_pton(AF_INET, ip.c_str(), bytes) == 1) return startConnect(4, bytes, port, where, fd, connected);
  if (inet_pton(AF_INET6, ip.c_str(), bytes) == 1) return startConnect(6, bytes, port, where, fd, connected);
  *fd = -1;
  *connected = false;
  return internalError(fmt::format("{}: '{}' is no numeric IPv4 or IPv6 address", where, ip));
}

Status checkConnect(int fd, const std::string& where, bool* connected) {
  pollfd p{fd, POLLOUT, 0};
  *connected = false;
  if (::poll(&p, 1, 0) <= 0) return {};
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return errnoError(where + ": connecting the side connection", err);
  *connected = true;
  return {};
}

Status accept(int listenFd, const std::string& where, int* fd) {
  *fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (*fd >= 0) {
    keepAlive(*fd);
    return {};
  }
  if (wouldBlock(errno) || errno == ECONNABORTED || errno == EPROTO) return {};
  return errnoError(where + ": accept", errno);
}

Status sendSome(int fd, const uint8_t* data, size_t size, size_t* done, const std::string& where) {
  while (*done < size) {
    const ssize_t n = ::send(fd, data + *done, size - *done, MSG_NOSIGNAL);
    if (n > 0) {
      *done += static_cast<size_t>(n);
    } else if (n < 0 && wouldBlock(errno)) {
      return {};
    } else {
      return errnoError(where + ": the peer's side connection broke during setup", n == 0 ? EPIPE : errno);
    }
  }
  return {};
}

Status receiveSome(int fd, uint8_t* data, size_t size, size_t* done, const std::string& where) {
  while (*done < size) {
    const ssize_t n = ::recv(fd, data + *done, size - *done, 0);
    if (n > 0) {
      *done += static_cast<size_t>(n);
    } else if (n < 0 && wouldBlock(errno)) {
      return {};
    } else {
      return errnoError(where + ": the peer's side connection closed during setup", n == 0 ? ECONNRESET : errno);
    }
  }
  return {};
}

bool peerClosing(int fd, uint8_t* record, size_t size, size_t* got) {
  while (*got < size) {
    const ssize_t n = ::recv(fd, record + *got, size - *got, MSG_DONTWAIT);
    if (n > 0) {
      *got += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n == 0 || !wouldBlock(errno);
  }
  return true;
}

}  // namespace hcl::side
