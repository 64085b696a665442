#include "transports/tcp/tcp_transport.h"

#include <asio/io_context.hpp>

#include "core/netif.h"
#include "transports/tcp/tcp_listener.h"
#include "transports/tcp/tcp_mesh.h"

namespace hcl {
namespace {

// Listeners live from listen() to finish() and belong to one communicator.
// No thread runs the io_context: setup drives it itself, and connections use
// non-blocking reads and writes.
class TcpTransport final : public Transport {
 public:
  TransportKind kind() const override { return TransportKind::Tcp; }

  Status listen(const TransportContext& ctx, PeerInfo& self) override {
    std::vector<std::unique_ptr<tcp::TcpListener>> opened;
    HCL_TRY(tcp::openListeners(ctx.rank, *io_, chooseInterfaces(), opened));
    for (auto& listener : opened) {
      self.addresses.push_back(listener->address);
      listeners_.push_back(std::move(listener));
    }
    return {};
  }

  Status prepare(const TransportContext&, const std::vector<int>&) override { return {}; }

  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    return tcp::connectTcpMesh(ctx, peers, io_, listeners_, out);
  }

  void finish() override { listeners_.clear(); }

 private:
  std::shared_ptr<asio::io_context> io_ = std::make_shared<asio::io_context>();
  std::vector<std::unique_ptr<tcp::TcpListener>> listeners_;  // declared after io_: closed first
};

}  // namespace

std::unique_ptr<Transport> makeTcpTransport() { return std::make_unique<TcpTransport>(); }

}  // namespace hcl
