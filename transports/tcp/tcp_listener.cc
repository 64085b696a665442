#include "transports/tcp/tcp_listener.h"

#include <fmt/format.h>

#include "core/socket_fd.h"
#include "core/log.h"
#include "transports/tcp/tcp_socket_util.h"

namespace hcl::tcp {
namespace {

// `refused`: why the kernel refused HCL_TCP_CONGESTION here, if it did.
Status openOne(asio::io_context& io, const NetInterface& itf, std::unique_ptr<TcpListener>& out,
               std::string& refused) {
  asio::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(itf.ip, ec);
  if (ec) return systemError(fmt::format("bad address '{}': {}", itf.ip, ec.message()));
  auto listener = std::make_unique<TcpListener>(io);
  const asio::ip::tcp::endpoint endpoint(ip, 0);
  asio::ip::tcp::acceptor& acceptor = listener->acceptor;
  openCloseOnExec(acceptor, endpoint.protocol(), ec);
  if (ec) return systemError("socket: " + ec.message());
  applyBufferSizes(acceptor);
  // Accepted sockets inherit the algorithm (tcp_socket_util.h).
  listener->congestionSetting = paramString("HCL_TCP_CONGESTION");
  listener->kernelCongestion = congestionInUse(acceptor.native_handle());
  if (!applyCongestionControl(acceptor.native_handle(),
                              congestionCandidates(listener->congestionSetting, true), &refused) &&
      !congestionIsAuto(listener->congestionSetting)) {
    listener->congestionRefused = true;
  } else {
    refused.clear();
  }
  acceptor.bind(endpoint, ec);
  if (ec) return systemError("bind: " + ec.message());
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return systemError("listen: " + ec.message());
  acceptor.non_blocking(true, ec);  // accepted in a loop until none is pending
  if (ec) return systemError("non-blocking listener: " + ec.message());
  const asio::ip::tcp::endpoint bound = acceptor.local_endpoint(ec);
  if (ec) return systemError("getsockname: " + ec.message());
  listener->address = NetAddress{itf.name,    itf.ip,        bound.port(), static_cast<uint8_t>(itf.prefixLen),
                                 itf.kind,    itf.speedMbps, itf.fabric};
  out = std::move(listener);
  return {};
}

}  // namespace

Status openListeners(int rank, asio::io_context& io, const std::vector<NetInterface>& interfaces,
                     std::vector<std::unique_ptr<TcpListener>>& out) {
  if (interfaces.empty()) {
    return systemError(fmt::format(
        "rank {}: no network interface for TCP (HCL_SOCKET_IFNAME='{}', HCL_SOCKET_FAMILY='{}')",
        rank, paramString("HCL_SOCKET_IFNAME"), paramString("HCL_SOCKET_FAMILY")));
  }
  std::string failures;
  std::string refusedOn;  // one warning per rank, however many addresses an interface has
  for (const NetInterface& itf : interfaces) {
    std::unique_ptr<TcpListener> listener;
    std::string refused;
    Status status = openOne(io, itf, listener, refused);
    if (!refused.empty()) {
      refusedOn += fmt::format("{}{} ({}): {}, using {}", refusedOn.empty() ? "" : "; ", itf.name, itf.ip, refused,
                               listener ? listener->kernelCongestion : std::string("the default"));
    }
    if (!status.ok()) {
      log::warn(log::Net, "rank {}: cannot listen on {} ({}): {}", rank, itf.name, itf.ip,
                status.message());
      failures += fmt::format("{}{} ({}): {}", failures.empty() ? "" : "; ", itf.name, itf.ip,
                              status.message());
      continue;
    }
    log::info(log::Net, "rank {}: listening on tcp {} via {}", rank,
              formatHostPort(listener->address.ip, listener->address.port), itf.name);
    out.push_back(std::move(listener));
  }
  if (!refusedOn.empty()) {
    log::warn(log::Net, "rank {}: HCL_TCP_CONGESTION={} refused on the listeners on {}", rank,
              paramString("HCL_TCP_CONGESTION"), refusedOn);
  }
  if (out.empty())
    return systemError(fmt::format("rank {}: could not open a TCP listener: {}", rank, failures));
  return {};
}

}  // namespace hcl::tcp
