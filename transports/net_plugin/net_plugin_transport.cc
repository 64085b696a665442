#include "transports/net_plugin/net_plugin_transport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <thread>

#include "core/deadline.h"
#include "core/log.h"
#include "core/wire.h"
#include "transports/net_plugin/net_plugin.h"
#include "transports/net_plugin/net_plugin_abi.h"
#include "transports/net_plugin/net_plugin_connection.h"
#include "transports/net_plugin/net_plugin_request.h"
#include "transports/prepared_blobs.h"

namespace hcl {
namespace {

using netplugin::NetPlugin;
using netplugin::NetPluginConnection;
using Handle = std::array<uint8_t, netabi::kHandleBytes>;

constexpr auto kNet = static_cast<log::Subsys>(log::Init | log::Net);
constexpr uint64_t kMaxPieceBytes = uint64_t{1} << 20;

struct Listening {
  void* comm = nullptr;
  Handle handle{};
};

// A link being set up: the send comm to the peer and the receive comm from it.
struct Opening {
  Handle theirHandle{};
  size_t slotBytes = 0;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
};

class NetPluginTransport final : public Transport {
 public:
  ~NetPluginTransport() override { closeLeftovers(); }

  TransportKind kind() const override { return TransportKind::NetPlugin; }

  Status listen(const TransportContext& ctx, PeerInfo& self) override {
    const netplugin::NetPluginRequest request = netplugin::readNetPluginRequest();
    if (request.off) return {};
    std::string why;
    plugin_ = netplugin::loadNetPlugin(request.spec, &why);
    if (!plugin_) return unavailable(ctx, request, why);
    int count = 0;
    if (Status s = plugin_->devices(&count); !s.ok()) return unavailable(ctx, request, s.message());
    std::vector<std::string> names;
    for (int d = 0; d < count; ++d) {
      netplugin::DeviceProperties p;
      if (Status s = plugin_->properties(d, p); !s.ok()) return unavailable(ctx, request, s.message());
      names.push_back(p.name);
      if (p.ptrSupport & netabi::kPtrHost) devices_.push_back({d, p});
    }
    if (devices_.empty()) {
      return unavailable(ctx, request,
                         fmt::format("net plugin '{}' has {} devices, none taking host memory", plugin_->name(), count));
    }
    self.netPlugin = plugin_->name();
    for (const Device& d : devices_) {
      if (d.properties.speedMbps <= 0) continue;
      const auto mbps = static_cast<uint32_t>(d.properties.speedMbps);
      self.netPluginSpeedMbps = self.netPluginSpeedMbps == 0 ? mbps : std::min(self.netPluginSpeedMbps, mbps);
    }
    log::info(kNet, "rank {}: NCCL net plugin '{}' (interface v{}, {}), devices: {}", ctx.rank, plugin_->name(),
              plugin_->version(), plugin_->library(), fmt::join(names, ", "));
    return {};
  }

  Status prepare(const TransportContext& ctx, const std::vector<int>& peers) override {
    if (!plugin_) return internalError(fmt::format("rank {}: net plugin links without a plugin", ctx.rank));
    const auto& all = *ctx.peers;
    const PeerInfo& me = all[static_cast<size_t>(ctx.rank)];
    // Ranks of one host spread over the plugin's devices, as NCCL's one NIC per GPU.
    const auto localIndex = std::count_if(all.begin(), all.begin() + ctx.rank,
                                          [&](const PeerInfo& p) { return p.hostId == me.hostId; });
    device_ = devices_[static_cast<size_t>(localIndex) % devices_.size()];
    // Pieces of the chunk size, within 4 KiB-1 MiB (each link registers
    // four each way) and the plugin's largest message.
    slotBytes_ = std::min<size_t>(std::clamp<uint64_t>(me.chunkBytes, 4096, kMaxPieceBytes) + sizeof(netplugin::PieceHeader),
                                  device_.properties.maxMessageBytes);
    if (slotBytes_ <= sizeof(netplugin::PieceHeader)) {
      return systemError(fmt::format("rank {}: net plugin '{}' device {} takes messages of {} bytes, too few for HCL's "
                                     "{}-byte piece header",
                                     ctx.rank, plugin_->name(), device_.index, device_.properties.maxMessageBytes,
                                     sizeof(netplugin::PieceHeader)));
    }
    if (device_.properties.maxComms > 0 && peers.size() * 3 > static_cast<size_t>(device_.properties.maxComms)) {
      return systemError(fmt::format("rank {}: net plugin '{}' device {} takes {} comms; links to {} peers need 3 each",
                                     ctx.rank, plugin_->name(), device_.index, device_.properties.maxComms,
                                     peers.size()));
    }
    for (int peer : peers) {
      Listening& l = listening_[peer];
      HCL_TRY(plugin_->listen(device_.index, l.handle.data(), &l.comm));
    }
    return {};
  }

  // The peer's listener handle, and this end's piece size.
  std::vector<uint8_t> preparedFor(int peer) const override {
    const auto it = listening_.find(peer);
    if (it == listening_.end()) return {};
    WireWriter w;
    w.put<uint64_t>(slotBytes_);
    w.put(it->second.handle);
    return w.take();
  }

  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    for (int peer : peers) HCL_TRY(readHandle(ctx, peer, opening_[peer]));
    const Deadline deadline(ctx.timeoutMs);
    while (!opening_.empty()) {
      bool moved = false;
      for (auto it = opening_.begin(); it != opening_.end();) {
        const int peer = it->first;
        Opening& o = it->second;
        if (!o.sendComm) {
          HCL_TRY(plugin_->connect(device_.index, o.theirHandle.data(), &o.sendComm));
          moved |= o.sendComm != nullptr;
        }
        Listening& l = listening_.at(peer);
        if (!o.recvComm) {
          HCL_TRY(plugin_->accept(l.comm, &o.recvComm));
          moved |= o.recvComm != nullptr;
        }
        if (!o.sendComm || !o.recvComm) {
          ++it;
          continue;
        }
        (void)plugin_->closeListen(l.comm);
        listening_.erase(peer);
        auto connection = std::make_unique<NetPluginConnection>(
            *plugin_, o.sendComm, o.recvComm, ctx.rank, peer, std::min(slotBytes_, o.slotBytes),
            fmt::format("net-plugin '{}' device {} ('{}')", plugin_->name(), device_.index, device_.properties.name));
        it = opening_.erase(it);  // the connection owns the comms now
        HCL_TRY(connection->open());
        out[static_cast<size_t>(peer)] = std::move(connection);
      }
      if (moved || opening_.empty()) continue;
      if (ctx.abortFlag && ctx.abortFlag->load(std::memory_order_acquire)) {
        return systemError(fmt::format("rank {}: aborted while connecting over net plugin '{}'", ctx.rank,
                                       plugin_->name()));
      }
      if (deadline.expired()) {
        std::vector<int> waiting;
        for (const auto& [peer, o] : opening_) waiting.push_back(peer);
        return systemError(fmt::format("rank {}: net plugin '{}' connected no link to rank(s) {} within {} ms",
                                       ctx.rank, plugin_->name(), fmt::join(waiting, ","), ctx.timeoutMs));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return {};
  }

  void finish() override { closeLeftovers(); }

 private:
  struct Device {
    int index = 0;
    netplugin::DeviceProperties properties;
  };

  Status readHandle(const TransportContext& ctx, int peer, Opening& o) const {
    const std::vector<uint8_t> blob = preparedBlobOf(ctx, peer, TransportKind::NetPlugin);
    WireReader r(blob.data(), blob.size());
    uint64_t slotBytes = 0;
    if (r.get(slotBytes) && r.get(o.theirHandle) && r.atEnd() && slotBytes > sizeof(netplugin::PieceHeader)) {
      o.slotBytes = static_cast<size_t>(slotBytes);
      return {};
    }
    return internalError(fmt::format("rank {}: rank {} left no net plugin listen handle for it", ctx.rank, peer));
  }

  // Comms of links that never finished (a failed init) and listeners left over.
  void closeLeftovers() {
    if (!plugin_) return;
    for (auto& [peer, o] : opening_) {
      if (o.sendComm) (void)plugin_->closeSend(o.sendComm);
      if (o.recvComm) (void)plugin_->closeRecv(o.recvComm);
    }
    opening_.clear();
    for (auto& [peer, l] : listening_) {
      if (l.comm) (void)plugin_->closeListen(l.comm);
    }
    listening_.clear();
  }

  static Status unavailable(const TransportContext& ctx, const netplugin::NetPluginRequest& request,
                            const std::string& why) {
    if (request.required) return systemError(fmt::format("rank {}: HCL_NET_PLUGIN='{}': {}", ctx.rank, request.spec, why));
    if (!request.spec.empty()) {
      log::warn(kNet, "rank {}: NCCL_NET_PLUGIN='{}' unusable, HCL's own transports carry the links: {}", ctx.rank,
                request.spec, why);
    } else {
      log::info(kNet, "rank {}: no NCCL net plugin: {}", ctx.rank, why);
    }
    return {};
  }

  NetPlugin* plugin_ = nullptr;  // process-wide, never unloaded
  std::vector<Device> devices_;  // those taking host memory
  Device device_;
  size_t slotBytes_ = 0;
  std::map<int, Listening> listening_;
  std::map<int, Opening> opening_;
};

}  // namespace

std::unique_ptr<Transport> makeNetPluginTransport() { return std::make_unique<NetPluginTransport>(); }

std::string describeNetPluginSupport() {
  const netplugin::NetPluginRequest request = netplugin::readNetPluginRequest();
  if (request.off) return "net plugin: off (HCL_NET_PLUGIN=none)";
  std::string why;
  if (NetPlugin* p = netplugin::loadNetPlugin(request.spec, &why)) {
    return fmt::format("net plugin: '{}' (interface v{}) from {}", p->name(), p->version(), p->library());
  }
  return "net plugin: none loaded (" + why + ")";
}

}  // namespace hcl
