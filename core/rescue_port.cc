#include "core/rescue_port.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace hcl {

RescuePort::RescuePort(RescuePort&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(std::exchange(other.port_, 0)) {}

RescuePort& RescuePort::operator=(RescuePort&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

Status RescuePort::open(const std::string& ip) {
  release();
  sockaddr_storage address{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    length = sizeof *v4;
  } else if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    length = sizeof *v6;
  } else {
    return invalidArgument(fmt::format("rescue port: '{}' is not a numeric address", ip));
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return systemError(fmt::format("rescue port: socket: {}", std::strerror(errno)));
  // The root that later listens on the port sets SO_REUSEADDR as well.
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    return systemError(fmt::format("rescue port: bind on {}: {}", ip, std::strerror(error)));
  }
  fd_ = fd;
  port_ = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  return {};
}

void RescuePort::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace hcl
