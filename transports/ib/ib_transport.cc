#include "transports/ib/ib_transport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/log.h"
#include "transports/ib/ib_mode.h"
#include "transports/ib/ib_net.h"
#include "transports/link.h"
#include "transports/net_choice.h"
#include "transports/net_plugin/net_transport.h"

namespace hcl {
namespace {

constexpr auto kNet = static_cast<log::Subsys>(log::Init | log::Net);

using ib::IbMode;

class IbSource final : public NetSource {
 public:
  TransportKind kind() const override { return TransportKind::Ib; }

  Status open(const TransportContext& ctx, netplugin::NetPlugin** out) override {
    *out = nullptr;
    HCL_TRY(ib::readIbMode(mode_, &askedBy_, ctx.net));
    if (mode_ == IbMode::Off) return {};
    const ib::IbSettings settings = ib::readIbSettings();
    std::string why;
    net_ = ib::IbNet::open(settings, &why);
    if (!net_) return unusable(ctx, why);
    *out = net_.get();
    return {};
  }

  Status unusable(const TransportContext& ctx, const std::string& why) const override {
    if (mode_ == IbMode::On) return systemError(fmt::format("rank {}: {}: {}", ctx.rank, askedBy_, why));
    log::info(kNet, "rank {}: no verbs links: {}", ctx.rank, why);
    return {};
  }

  void publish(const std::vector<NetDevice>& devices, PeerInfo& self) override {
    fabrics_.assign(net_->ports().size(), std::string());
    for (const NetDevice& d : devices) {
      const ib::IbPortSummary& p = net_->ports()[static_cast<size_t>(d.index)];
      const std::string fabric = ib::publishedFabric(p, self.addresses);
      fabrics_[static_cast<size_t>(d.index)] = fabric;
      if (std::find(self.ibFabrics.begin(), self.ibFabrics.end(), fabric) == self.ibFabrics.end()) {
        self.ibFabrics.push_back(fabric);
      }
      if (p.speedMbps > 0) {
        self.ibSpeedMbps = self.ibSpeedMbps == 0 ? p.speedMbps : std::min(self.ibSpeedMbps, p.speedMbps);
      }
    }
    std::sort(self.ibFabrics.begin(), self.ibFabrics.end());
  }

  // Ports on the fabric the link chose (both ends pick the same one).
  bool carries(const NetDevice& device, const Link& link) const override {
    return link.kind == TransportKind::Ib && link.linkClass == "verbs:" + fabrics_[static_cast<size_t>(device.index)];
  }

  // The side connection goes to the peer's address on the network the
  // link chose for TCP (the lower rank connects to the higher's listener).
  Status prepareHandle(const TransportContext& ctx, int peer, void* handle) const override {
    const PeerInfo& p = (*ctx.peers)[static_cast<size_t>(peer)];
    const Link& link = (*ctx.links)[static_cast<size_t>(peer)];
    const int index = peer > ctx.rank ? link.listenerAddress : link.connectorAddress;
    std::string ip = p.rescueIp;
    if (index >= 0 && static_cast<size_t>(index) < p.addresses.size()) ip = p.addresses[static_cast<size_t>(index)].ip;
    if (ip.empty() && !p.addresses.empty()) ip = p.addresses.front().ip;
    if (!ib::setHandleAddress(handle, ip)) {
      return internalError(fmt::format("rank {}: no address to reach rank {}'s verbs listener ('{}')", ctx.rank, peer,
                                       ip));
    }
    return {};
  }

  // The side connection a link is set up over stays open and is watched.
  bool watchesPeers() const override { return true; }

  std::string label() const override { return "ib (verbs)"; }

 private:
  IbMode mode_ = IbMode::Auto;
  std::string askedBy_;
  std::unique_ptr<ib::IbNet> net_;
  std::vector<std::string> fabrics_;  // published, per port
};

}  // namespace

std::unique_ptr<Transport> makeIbTransport() { return makeNetTransport(std::make_unique<IbSource>()); }

std::string describeIbSupport() {
  IbMode mode = IbMode::Auto;
  if (Status s = ib::readIbMode(mode); !s.ok()) return "verbs: " + s.message();
  if (mode == IbMode::Off) {
    const NetRequest request = readNetRequest();
    if (!netRequestAllows(request, TransportKind::Ib)) return fmt::format("verbs: off ({}='{}')", request.variable, request.name);
    return "verbs: off (HCL_IB)";
  }
  std::string why;
  const auto net = ib::IbNet::open(ib::readIbSettings(), &why);
  if (!net) return "verbs: no usable port (" + why + ")";
  std::vector<std::string> ports;
  for (const ib::IbPortSummary& p : net->ports()) {
    ports.push_back(fmt::format("{} ({}, GID {}, {} Mbit/s)", p.name, p.fabric, p.gidIndex, p.speedMbps));
  }
  return fmt::format("verbs: {} from {}", fmt::join(ports, ", "), net->library());
}

}  // namespace hcl
