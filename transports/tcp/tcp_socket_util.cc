#include "transports/tcp/tcp_socket_util.h"

#include <fmt/format.h>

namespace hcl::tcp {

std::string formatHostPort(const std::string& ip, uint16_t port) {
  if (ip.find(':') != std::string::npos) return fmt::format("[{}]:{}", ip, port);
  return fmt::format("{}:{}", ip, port);
}

std::string formatEndpoint(const asio::ip::tcp::endpoint& endpoint) {
  return formatHostPort(endpoint.address().to_string(), endpoint.port());
}

}  // namespace hcl::tcp
