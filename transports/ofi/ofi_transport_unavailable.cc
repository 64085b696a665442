// The libfabric transport of a build without libfabric's headers: it links
// nothing, and refuses only where libfabric is asked for by name.
#include <fmt/format.h>

#include "transports/ofi/ofi_request.h"
#include "transports/ofi/ofi_transport.h"

namespace hcl {
namespace {

class OfiUnavailable final : public Transport {
 public:
  TransportKind kind() const override { return TransportKind::Ofi; }
  Status listen(const TransportContext& ctx, PeerInfo&) override {
    ofi::OfiRequest request;
    HCL_TRY(ofi::readOfiRequest(request, ctx.net));
    if (request.mode != ofi::OfiMode::On || request.byNetRequest) return {};
    return systemError(fmt::format("rank {}: {} asks for libfabric, but this build of HCL was made without "
                                   "libfabric's headers (rdma/fabric.h)",
                                   ctx.rank, request.askedBy));
  }
  Status prepare(const TransportContext& ctx, const std::vector<int>&) override {
    return internalError(fmt::format("rank {}: libfabric links chosen in a build without libfabric", ctx.rank));
  }
  Status connect(const TransportContext&, const std::vector<int>&, std::vector<std::unique_ptr<Connection>>&) override {
    return {};
  }
  void finish() override {}
};

}  // namespace

std::unique_ptr<Transport> makeOfiTransport() { return std::make_unique<OfiUnavailable>(); }

std::string describeOfiSupport() { return "ofi: not built (no libfabric headers, rdma/fabric.h, at configure time)"; }

}  // namespace hcl
