#include "transports/net_plugin/net_plugin_transport.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/log.h"
#include "transports/net_choice.h"
#include "transports/net_plugin/net_plugin.h"
#include "transports/net_plugin/net_plugin_request.h"
#include "transports/net_plugin/net_transport.h"

namespace hcl {
namespace {

constexpr auto kNet = static_cast<log::Subsys>(log::Init | log::Net);

// An external NCCL net plugin, loaded once per process and never unloaded.
class PluginSource final : public NetSource {
 public:
  TransportKind kind() const override { return TransportKind::NetPlugin; }

  Status open(const TransportContext& ctx, netplugin::NetPlugin** out) override {
    *out = nullptr;
    request_ = netplugin::readNetPluginRequest(ctx.net);
    if (request_.off) return {};
    std::string why;
    plugin_ = netplugin::loadNetPlugin(request_.spec, &why);
    if (!plugin_) return unusable(ctx, why);
    *out = plugin_;
    return {};
  }

  Status unusable(const TransportContext& ctx, const std::string& why) const override {
    if (request_.required) {
      return systemError(fmt::format("rank {}: HCL_NET_PLUGIN='{}': {}", ctx.rank, request_.spec, why));
    }
    if (!request_.spec.empty()) {
      log::warn(kNet, "rank {}: NCCL_NET_PLUGIN='{}' unusable, HCL's own transports carry the links: {}", ctx.rank,
                request_.spec, why);
    } else {
      log::info(kNet, "rank {}: no NCCL net plugin: {}", ctx.rank, why);
    }
    return {};
  }

  void publish(const std::vector<NetDevice>& devices, PeerInfo& self) override {
    self.netPlugin = plugin_->name();
    for (const NetDevice& d : devices) {
      if (d.properties.speedMbps <= 0) continue;
      const auto mbps = static_cast<uint32_t>(d.properties.speedMbps);
      self.netPluginSpeedMbps = self.netPluginSpeedMbps == 0 ? mbps : std::min(self.netPluginSpeedMbps, mbps);
    }
  }

  std::string label() const override {
    return plugin_ ? fmt::format("net-plugin '{}' (interface v{})", plugin_->name(), plugin_->version())
                   : std::string("net-plugin");
  }

 private:
  netplugin::NetPluginRequest request_;
  netplugin::NetPlugin* plugin_ = nullptr;  // process-wide
};

}  // namespace

std::unique_ptr<Transport> makeNetPluginTransport() { return makeNetTransport(std::make_unique<PluginSource>()); }

std::string describeNetPluginSupport() {
  const NetRequest net = readNetRequest();
  const netplugin::NetPluginRequest request = netplugin::readNetPluginRequest(net);
  if (request.off) {
    if (!netRequestAllows(net, TransportKind::NetPlugin)) return fmt::format("net plugin: off ({}='{}')", net.variable, net.name);
    return "net plugin: off (HCL_NET_PLUGIN=none)";
  }
  std::string why;
  if (netplugin::NetPlugin* p = netplugin::loadNetPlugin(request.spec, &why)) {
    return fmt::format("net plugin: '{}' (interface v{}) from {}", p->name(), p->version(), p->library());
  }
  return "net plugin: none loaded (" + why + ")";
}

}  // namespace hcl
