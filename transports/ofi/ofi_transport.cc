#include "transports/ofi/ofi_transport.h"

#include <fmt/format.h>

#include <map>

#include "core/log.h"
#include "transports/link.h"
#include "transports/ofi/fabric_api.h"
#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/ofi_endpoint.h"
#include "transports/ofi/ofi_request.h"
#include "transports/peer_watch.h"
#include "transports/prepared_blobs.h"

namespace hcl {
namespace {

// Runs after the TCP transport's listen(), whose NICs it ties endpoints to.
class OfiTransport final : public Transport {
 public:
  TransportKind kind() const override { return TransportKind::Ofi; }

  Status listen(const TransportContext& ctx, PeerInfo& self) override {
    ofi::OfiRequest request;
    HCL_TRY(ofi::readOfiRequest(request, ctx.net));
    if (request.mode == ofi::OfiMode::Off) return {};
    if (request.mode == ofi::OfiMode::Auto && !ofi::hostShowsRdmaHardware()) return {};
    std::string why;
    const ofi::FabricApi* api = ofi::fabricApi(&why);
    if (!api) return unavailable(ctx, request, why);
    std::vector<ofi::OpenedEndpoint> opened;
    if (Status s = ofi::Endpoint::openPerNic(*api, request, ctx.rank, ctx.nranks, self.addresses, opened); !s.ok()) {
      return unavailable(ctx, request, s.message());
    }
    if (opened.empty()) {
      return unavailable(ctx, request,
                         request.provider.empty() ? std::string("libfabric offers no provider HCL can use")
                                                  : fmt::format("libfabric offers no provider '{}' with tagged "
                                                                "reliable messages on a NIC HCL uses",
                                                                request.provider));
    }
    for (ofi::OpenedEndpoint& o : opened) {
      const ofi::Endpoint& e = *o.endpoint;
      self.ofiEndpoints.push_back({e.provider(), e.fabric(), o.nic, e.address()});
      log::info(static_cast<log::Subsys>(log::Init | log::Net), "rank {}: libfabric endpoint on provider '{}', fabric '{}'{}",
                ctx.rank, e.provider(), e.fabric(),
                o.nic >= 0 ? " via " + self.addresses[static_cast<size_t>(o.nic)].ifname : std::string());
      endpoints_.push_back(std::move(o.endpoint));
    }
    return {};
  }

  Status prepare(const TransportContext& ctx, const std::vector<int>& peers) override {
    for (int peer : peers) {
      const Link& link = (*ctx.links)[static_cast<size_t>(peer)];
      const bool lower = ctx.rank < peer;
      const int mine = lower ? link.connectorOfiEndpoint : link.listenerOfiEndpoint;
      const int theirs = lower ? link.listenerOfiEndpoint : link.connectorOfiEndpoint;
      const auto& theirEndpoints = (*ctx.peers)[static_cast<size_t>(peer)].ofiEndpoints;
      if (mine < 0 || static_cast<size_t>(mine) >= endpoints_.size() || theirs < 0 ||
          static_cast<size_t>(theirs) >= theirEndpoints.size()) {
        return internalError(fmt::format("rank {}: libfabric link to rank {} names endpoints {} and {}, of {} and {}",
                                         ctx.rank, peer, mine, theirs, endpoints_.size(), theirEndpoints.size()));
      }
      HCL_TRY(endpoints_[static_cast<size_t>(mine)]->addPeer(peer, theirEndpoints[static_cast<size_t>(theirs)].address));
      used_[peer] = mine;
    }
    if (!(*ctx.peers)[static_cast<size_t>(ctx.rank)].peerWatch) return {};
    // The higher rank of a pair listens on the NIC its endpoint for the
    // link sends from, which the link's fabric reaches.
    if (!watch_) watch_ = std::make_shared<PeerWatch>(ctx.rank, ctx.nranks, "libfabric");
    return watch_->prepare(ctx, peers, [&](int peer) {
      const PeerInfo& higher = (*ctx.peers)[static_cast<size_t>(std::max(peer, ctx.rank))];
      return higher.ofiEndpoints[static_cast<size_t>((*ctx.links)[static_cast<size_t>(peer)].listenerOfiEndpoint)].nic;
    });
  }

  std::vector<uint8_t> preparedFor(int peer) const override { return watch_ ? watch_->preparedFor(peer) : std::vector<uint8_t>{}; }

  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    if (watch_) HCL_TRY(watch_->connect(ctx, [&](int peer) { return preparedBlobOf(ctx, peer, TransportKind::Ofi); }));
    for (int peer : peers) {
      out[static_cast<size_t>(peer)] =
          std::make_unique<ofi::OfiConnection>(endpoints_[static_cast<size_t>(used_.at(peer))], watch_, peer);
    }
    return {};
  }

  // Endpoints without a link on them close now (the connections keep the others).
  // The provider's connection (a socket on tcp;ofi_rxm) and the peer watch.
  size_t descriptorsPerPeer() const override { return 2; }

  void finish() override {
    endpoints_.clear();
    used_.clear();
  }

 private:
  // Asked for by name (HCL_OFI on, or a provider named): an error. Missing
  // or failing to open where HCL looked on its own (auto, on a host with an
  // RDMA device; say devices passed into a container whose locked-memory
  // limit is too small): links stay on TCP, and INFO logs why.
  static Status unavailable(const TransportContext& ctx, const ofi::OfiRequest& request, const std::string& why) {
    if (request.mode == ofi::OfiMode::On && !request.byNetRequest) {
      return systemError(fmt::format("rank {}: {} asks for libfabric{}: {}", ctx.rank, request.askedBy,
                                     request.provider.empty() ? "" : " provider '" + request.provider + "'", why));
    }
    if (request.byNetRequest) {
      log::warn(static_cast<log::Subsys>(log::Init | log::Net),
                "rank {}: {} and HCL's libfabric is unusable ({}); only a net plugin of that name can take the links",
                ctx.rank, request.askedBy, why);
      return {};
    }
    log::info(static_cast<log::Subsys>(log::Init | log::Net), "rank {}: no libfabric links: {}", ctx.rank, why);
    return {};
  }

  std::vector<std::shared_ptr<ofi::Endpoint>> endpoints_;
  std::map<int, int> used_;  // peer -> index of the endpoint its link uses
  std::shared_ptr<PeerWatch> watch_;
};

}  // namespace

std::unique_ptr<Transport> makeOfiTransport() { return std::make_unique<OfiTransport>(); }

std::string describeOfiSupport() {
  std::string why;
  if (ofi::fabricApi(&why)) return "ofi: libfabric.so.1 opens here (HCL_OFI, HCL_OFI_PROVIDER choose when to use it)";
  return "ofi: built, but " + why;
}

}  // namespace hcl
