#include "transports/tcp/tcp_transport.h"

#include <algorithm>
#include <asio/io_context.hpp>

#include "core/log.h"
#include "core/netif.h"
#include "core/params.h"
#include "transports/tcp/tcp_listener.h"
#include "transports/tcp/tcp_mesh.h"
#include "transports/tcp/tcp_stripe.h"

namespace hcl {
namespace {

// Listeners live from listen() to finish() and belong to one communicator.
// No thread runs the io_context: setup drives it itself, and connections use
// non-blocking reads and writes.
class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(int streams) : streams_(streams) {}

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
    const int streams = streams_ > 0 ? streams_ : tcpStreamsWanted();
    return tcp::connectTcpMesh(ctx, peers, io_, listeners_, out, streams);
  }

  void finish() override { listeners_.clear(); }
  size_t descriptorsPerPeer() const override {
    return static_cast<size_t>(streams_ > 0 ? streams_ : tcpStreamsWanted());
  }

 private:
  int streams_;  // 0: HCL_TCP_STREAMS
  std::shared_ptr<asio::io_context> io_ = std::make_shared<asio::io_context>();
  std::vector<std::unique_ptr<tcp::TcpListener>> listeners_;  // declared after io_: closed first
};

}  // namespace

std::unique_ptr<Transport> makeTcpTransport() { return std::make_unique<TcpTransport>(0); }

int tcpStreamsWanted() {
  if (resolveParam("HCL_TCP_STREAMS").source != ParamSource::Default) {
    return static_cast<int>(std::clamp<int64_t>(paramInt("HCL_TCP_STREAMS"), 1, tcp::kMaxStreams));
  }
  constexpr int64_t kNcclMostThreads = 16;
  int64_t threads = paramInt("HCL_SOCKET_NTHREADS");
  if (threads > kNcclMostThreads) {
    log::warn(log::Init, "{}={} is above NCCL's maximum of {}; using {}", resolveParam("HCL_SOCKET_NTHREADS").origin,
              threads, kNcclMostThreads, kNcclMostThreads);
    threads = kNcclMostThreads;
  }
  const int64_t wanted = threads * paramInt("HCL_NSOCKS_PERTHREAD");
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, tcp::kMaxStreams));
}

std::unique_ptr<Transport> makeTcpTransport(int streams) {
  return std::make_unique<TcpTransport>(std::max(1, streams));
}

}  // namespace hcl
