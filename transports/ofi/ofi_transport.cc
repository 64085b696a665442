#include "transports/ofi/ofi_transport.h"

#include <fmt/format.h>

#include "core/log.h"
#include "transports/link.h"
#include "transports/ofi/fabric_api.h"
#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/ofi_endpoint.h"
#include "transports/ofi/ofi_request.h"

namespace hcl {
namespace {

class OfiTransport final : public Transport {
 public:
  TransportKind kind() const override { return TransportKind::Ofi; }

  Status listen(const TransportContext& ctx, PeerInfo& self) override {
    ofi::OfiRequest request;
    HCL_TRY(ofi::readOfiRequest(request));
    if (request.mode == ofi::OfiMode::Off) return {};
    if (request.mode == ofi::OfiMode::Auto && !ofi::hostShowsRdmaHardware()) return {};
    std::string why;
    const ofi::FabricApi* api = ofi::fabricApi(&why);
    if (!api) return unavailable(ctx, request, why);
    std::unique_ptr<ofi::Endpoint> opened;
    bool found = false;
    if (Status s = ofi::Endpoint::open(*api, request, ctx.rank, ctx.nranks, opened, &found); !s.ok()) {
      return unavailable(ctx, request, s.message());
    }
    if (!found) {
      return unavailable(ctx, request,
                         request.provider.empty() ? std::string("libfabric offers no provider HCL can use")
                                                  : fmt::format("libfabric offers no provider '{}' with tagged "
                                                                "reliable messages",
                                                                request.provider));
    }
    endpoint_ = std::move(opened);
    self.ofiProvider = endpoint_->provider();
    self.ofiFabric = endpoint_->fabric();
    self.ofiAddress = endpoint_->address();
    log::info(static_cast<log::Subsys>(log::Init | log::Net), "rank {}: libfabric endpoint on provider '{}', fabric '{}'",
              ctx.rank, self.ofiProvider, self.ofiFabric);
    return {};
  }

  Status prepare(const TransportContext& ctx, const std::vector<int>& peers) override {
    if (!endpoint_) return internalError(fmt::format("rank {}: libfabric links chosen without an endpoint", ctx.rank));
    for (int peer : peers) HCL_TRY(endpoint_->addPeer(peer, (*ctx.peers)[static_cast<size_t>(peer)].ofiAddress));
    return {};
  }

  Status connect(const TransportContext&, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    for (int peer : peers) out[static_cast<size_t>(peer)] = std::make_unique<ofi::OfiConnection>(endpoint_, peer);
    connected_ = !peers.empty();
    return {};
  }

  // Without a link on it the endpoint is closed now (its connections keep
  // it otherwise).
  void finish() override {
    if (!connected_) endpoint_.reset();
  }

 private:
  // Asked for by name (HCL_OFI on, or a provider named): an error. Missing
  // or failing to open where HCL looked on its own (auto, on a host with an
  // RDMA device; say devices passed into a container whose locked-memory
  // limit is too small): links stay on TCP, and INFO logs why.
  static Status unavailable(const TransportContext& ctx, const ofi::OfiRequest& request, const std::string& why) {
    if (request.mode == ofi::OfiMode::On) {
      return systemError(fmt::format("rank {}: HCL_OFI asks for libfabric{}: {}", ctx.rank,
                                     request.provider.empty() ? "" : " provider '" + request.provider + "'", why));
    }
    log::info(static_cast<log::Subsys>(log::Init | log::Net), "rank {}: no libfabric links: {}", ctx.rank, why);
    return {};
  }

  std::shared_ptr<ofi::Endpoint> endpoint_;
  bool connected_ = false;
};

}  // namespace

std::unique_ptr<Transport> makeOfiTransport() { return std::make_unique<OfiTransport>(); }

std::string describeOfiSupport() {
  std::string why;
  if (ofi::fabricApi(&why)) return "ofi: libfabric.so.1 opens here (HCL_OFI, HCL_OFI_PROVIDER choose when to use it)";
  return "ofi: built, but " + why;
}

}  // namespace hcl
