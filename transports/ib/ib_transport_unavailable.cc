// The verbs transport of a build without libibverbs' headers: it links
// nothing, and refuses only where verbs are asked for (HCL_IB=on).
#include <fmt/format.h>

#include "transports/ib/ib_mode.h"
#include "transports/ib/ib_transport.h"

namespace hcl {
namespace {

class IbUnavailable final : public Transport {
 public:
  TransportKind kind() const override { return TransportKind::Ib; }
  Status listen(const TransportContext& ctx, PeerInfo&) override {
    ib::IbMode mode = ib::IbMode::Auto;
    std::string askedBy;
    HCL_TRY(ib::readIbMode(mode, &askedBy, ctx.net));
    if (mode != ib::IbMode::On) return {};
    return systemError(fmt::format("rank {}: {}, but this build of HCL was made without libibverbs' headers "
                                   "(infiniband/verbs.h)",
                                   ctx.rank, askedBy));
  }
  Status prepare(const TransportContext& ctx, const std::vector<int>&) override {
    return internalError(fmt::format("rank {}: verbs links chosen in a build without verbs", ctx.rank));
  }
  Status connect(const TransportContext&, const std::vector<int>&, std::vector<std::unique_ptr<Connection>>&) override {
    return {};
  }
  void finish() override {}
};

}  // namespace

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<IbUnavailable>(); }

std::string describeIbSupport() { return "verbs: not built (no libibverbs headers, infiniband/verbs.h, at configure time)"; }

}  // namespace hcl
