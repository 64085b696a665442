#include "transports/tcp/tcp_socket_util.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace hcl::tcp {

std::string formatHostPort(const std::string& ip, uint16_t port) {
  if (ip.find(':') != std::string::npos) return fmt::format("[{}]:{}", ip, port);
  return fmt::format("{}:{}", ip, port);
}

std::string formatEndpoint(const asio::ip::tcp::endpoint& endpoint) {
  return formatHostPort(endpoint.address().to_string(), endpoint.port());
}

bool isThisHostAddress(const asio::ip::address& address,
                       const std::vector<NetInterface>& interfaces) {
  if (address.is_loopback()) return true;
  for (const NetInterface& itf : interfaces) {
    asio::error_code ec;
    const asio::ip::address ours = asio::ip::make_address(itf.ip, ec);
    if (!ec && ours == address) return true;
  }
  return false;
}

bool isSameHostConnection(const asio::ip::tcp::socket& socket,
                          const std::vector<NetInterface>& interfaces) {
  asio::error_code ec;
  const asio::ip::tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return false;
  const asio::ip::tcp::endpoint local = socket.local_endpoint(ec);
  if (ec) return false;
  return remote.address().is_loopback() || remote.address() == local.address() ||
         isThisHostAddress(remote.address(), interfaces);
}

namespace {

// Linux names its algorithms in lower case, and so do the two keywords.
std::string normalizedCongestion(std::string_view setting) {
  while (!setting.empty() && std::isspace(static_cast<unsigned char>(setting.front()))) setting.remove_prefix(1);
  while (!setting.empty() && std::isspace(static_cast<unsigned char>(setting.back()))) setting.remove_suffix(1);
  std::string name(setting);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

bool congestionIsAuto(std::string_view setting) {
  const std::string name = normalizedCongestion(setting);
  return name.empty() || name == "auto";
}

std::vector<std::string> congestionCandidates(std::string_view setting, bool sameHost) {
  if (congestionIsAuto(setting)) {
    if (sameHost) return {"cubic", "reno"};
    return {};
  }
  std::string name = normalizedCongestion(setting);
  if (name == "system") return {};
  return {std::move(name)};
}

bool applyCongestionControl(int fd, const std::vector<std::string>& candidates,
                            std::string* refused) {
  for (const std::string& name : candidates) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0)
      return true;
    const int error = errno;
    if (refused) {
      *refused += fmt::format("{}{}: {}", refused->empty() ? "" : "; ", name, std::strerror(error));
    }
  }
  return candidates.empty();
}

std::string congestionInUse(int fd) {
  char inUse[64] = {};
  socklen_t length = sizeof inUse - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, inUse, &length) != 0) return {};
  return std::string(inUse, ::strnlen(inUse, length));
}

}  // namespace hcl::tcp
