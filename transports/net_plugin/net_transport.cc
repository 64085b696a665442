#include "transports/net_plugin/net_transport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <thread>

#include "core/deadline.h"
#include "core/log.h"
#include "core/wire.h"
#include "transports/net_plugin/net_plugin_abi.h"
#include "transports/link.h"
#include "transports/net_plugin/net_plugin_connection.h"
#include "transports/peer_watch.h"
#include "transports/prepared_blobs.h"

namespace hcl {
namespace {

using netplugin::NetPlugin;
using netplugin::NetPluginConnection;
using Handle = std::array<uint8_t, netabi::kHandleBytes>;

constexpr auto kNet = static_cast<log::Subsys>(log::Init | log::Net);
constexpr uint64_t kMaxPieceBytes = uint64_t{1} << 20;

// This end of the link to one peer: its device, piece size and listener.
struct Listening {
  NetDevice device;
  size_t slotBytes = 0;
  void* comm = nullptr;
  Handle handle{};
};

// A link being set up: the send comm to the peer and the receive comm from it.
struct Opening {
  Handle theirHandle{};
  std::vector<uint8_t> theirWatch;  // PeerWatch::preparedFor
  size_t slotBytes = 0;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
};

class NetTransport final : public Transport {
 public:
  explicit NetTransport(std::unique_ptr<NetSource> source) : source_(std::move(source)) {}
  ~NetTransport() override { closeLeftovers(); }

  TransportKind kind() const override { return source_->kind(); }

  Status listen(const TransportContext& ctx, PeerInfo& self) override {
    HCL_TRY(source_->open(ctx, &net_));
    if (!net_) return {};
    std::vector<std::string> names;
    if (Status s = listDevices(ctx, names); !s.ok()) {
      net_ = nullptr;
      devices_.clear();
      return source_->unusable(ctx, s.message());
    }
    source_->publish(devices_, self);
    log::info(kNet, "rank {}: {} from {}, devices: {}", ctx.rank, source_->label(), net_->library(),
              fmt::join(names, ", "));
    return {};
  }

  Status prepare(const TransportContext& ctx, const std::vector<int>& peers) override {
    if (!net_) return internalError(fmt::format("rank {}: {} links without the network", ctx.rank, source_->label()));
    const PeerInfo& me = (*ctx.peers)[static_cast<size_t>(ctx.rank)];
    std::map<int, size_t> linksOn;  // per device index
    for (int peer : peers) {
      HCL_TRY(chooseDevice(ctx, peer));
      Listening& l = listening_[peer];
      const NetDevice& d = l.device;
      // Pieces of the chunk size, within 4 KiB-1 MiB (each link registers
      // four each way) and the device's largest message.
      l.slotBytes = std::min<size_t>(
          std::clamp<uint64_t>(me.chunkBytes, 4096, kMaxPieceBytes) + sizeof(netplugin::PieceHeader),
          d.properties.maxMessageBytes);
      if (l.slotBytes <= sizeof(netplugin::PieceHeader)) {
        return systemError(fmt::format("rank {}: {} device {} takes messages of {} bytes, too few for HCL's "
                                       "{}-byte piece header",
                                       ctx.rank, source_->label(), d.index, d.properties.maxMessageBytes,
                                       sizeof(netplugin::PieceHeader)));
      }
      const size_t links = ++linksOn[static_cast<size_t>(d.index)];
      if (d.properties.maxComms > 0 && links * 3 > static_cast<size_t>(d.properties.maxComms)) {
        return systemError(fmt::format("rank {}: {} device {} takes {} comms; links to {} peers need 3 each",
                                       ctx.rank, source_->label(), d.index, d.properties.maxComms, links));
      }
      HCL_TRY(net_->listen(d.index, l.handle.data(), &l.comm));
    }
    if (source_->watchesPeers() || !me.peerWatch) return {};
    // The higher rank of a pair listens on its address on the network the
    // link chose for TCP.
    if (!watch_) watch_ = std::make_shared<PeerWatch>(ctx.rank, ctx.nranks, source_->label());
    return watch_->prepare(ctx, peers, [&](int peer) { return (*ctx.links)[static_cast<size_t>(peer)].listenerAddress; });
  }

  // The peer's listener handle, this end's piece size, and where this
  // rank's peer watch listens.
  std::vector<uint8_t> preparedFor(int peer) const override {
    const auto it = listening_.find(peer);
    if (it == listening_.end()) return {};
    WireWriter w;
    w.put<uint64_t>(it->second.slotBytes);
    w.put(it->second.handle);
    w.putBytes(watch_ ? watch_->preparedFor(peer) : std::vector<uint8_t>{});
    return w.take();
  }

  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    for (int peer : peers) HCL_TRY(readHandle(ctx, peer, opening_[peer]));
    if (watch_) HCL_TRY(watch_->connect(ctx, [&](int peer) { return opening_.at(peer).theirWatch; }));
    const Deadline deadline(ctx.timeoutMs);
    while (!opening_.empty()) {
      bool moved = false;
      for (auto it = opening_.begin(); it != opening_.end();) {
        const int peer = it->first;
        Opening& o = it->second;
        Listening& l = listening_.at(peer);
        if (!o.sendComm) {
          HCL_TRY(net_->connect(l.device.index, o.theirHandle.data(), &o.sendComm));
          moved |= o.sendComm != nullptr;
        }
        if (!o.recvComm) {
          HCL_TRY(net_->accept(l.comm, &o.recvComm));
          moved |= o.recvComm != nullptr;
        }
        if (!o.sendComm || !o.recvComm) {
          ++it;
          continue;
        }
        (void)net_->closeListen(l.comm);
        const NetDevice device = l.device;
        const size_t slotBytes = std::min(l.slotBytes, o.slotBytes);
        listening_.erase(peer);
        auto connection = std::make_unique<NetPluginConnection>(
            *net_, o.sendComm, o.recvComm, ctx.rank, peer, slotBytes,
            fmt::format("{} device {} ('{}')", source_->label(), device.index, device.properties.name), watch_);
        it = opening_.erase(it);  // the connection owns the comms now
        HCL_TRY(connection->open());
        out[static_cast<size_t>(peer)] = std::move(connection);
      }
      if (moved || opening_.empty()) continue;
      if (ctx.abortFlag && ctx.abortFlag->load(std::memory_order_acquire)) {
        return systemError(fmt::format("rank {}: aborted while connecting over {}", ctx.rank, source_->label()));
      }
      if (deadline.expired()) {
        std::vector<int> waiting;
        for (const auto& [peer, o] : opening_) waiting.push_back(peer);
        return systemError(fmt::format("rank {}: {} connected no link to rank(s) {} within {} ms", ctx.rank,
                                       source_->label(), fmt::join(waiting, ","), ctx.timeoutMs));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return {};
  }

  void finish() override { closeLeftovers(); }
  // A plugin's send and receive connections (sockets on a socket plugin),
  // and the peer watch or verbs' side connection.
  size_t descriptorsPerPeer() const override { return 3; }

 private:
  Status listDevices(const TransportContext& ctx, std::vector<std::string>& names) {
    int count = 0;
    HCL_TRY(net_->devices(&count));
    for (int d = 0; d < count; ++d) {
      netplugin::DeviceProperties p;
      HCL_TRY(net_->properties(d, p));
      names.push_back(p.name);
      if (p.ptrSupport & netabi::kPtrHost) devices_.push_back({d, p});
    }
    if (devices_.empty()) {
      return systemError(fmt::format("{} has {} devices, none taking host memory", source_->label(), count));
    }
    return {};
  }

  // The device for the link to `peer`: ranks of one host spread over the
  // devices that carry it, as NCCL gives each GPU its own NIC.
  Status chooseDevice(const TransportContext& ctx, int peer) {
    const auto& all = *ctx.peers;
    const PeerInfo& me = all[static_cast<size_t>(ctx.rank)];
    const Link& link = (*ctx.links)[static_cast<size_t>(peer)];
    std::vector<NetDevice> usable;
    for (const NetDevice& d : devices_) {
      if (source_->carries(d, link)) usable.push_back(d);
    }
    if (usable.empty()) {
      return systemError(fmt::format("rank {}: no {} device of this rank carries the link to rank {} ({})", ctx.rank,
                                     source_->label(), peer, link.linkClass));
    }
    const auto localIndex = std::count_if(all.begin(), all.begin() + ctx.rank,
                                          [&](const PeerInfo& p) { return p.hostId == me.hostId; });
    listening_[peer].device = usable[static_cast<size_t>(localIndex) % usable.size()];
    return {};
  }

  Status readHandle(const TransportContext& ctx, int peer, Opening& o) const {
    const std::vector<uint8_t> blob = preparedBlobOf(ctx, peer, source_->kind());
    WireReader r(blob.data(), blob.size());
    uint64_t slotBytes = 0;
    if (r.get(slotBytes) && r.get(o.theirHandle) && r.getBytes(o.theirWatch) && r.atEnd() &&
        slotBytes > sizeof(netplugin::PieceHeader)) {
      o.slotBytes = static_cast<size_t>(slotBytes);
      return source_->prepareHandle(ctx, peer, o.theirHandle.data());
    }
    return internalError(fmt::format("rank {}: rank {} left no {} listen handle for it", ctx.rank, peer,
                                     source_->label()));
  }

  // Comms of links that never finished (a failed init) and listeners left over.
  void closeLeftovers() {
    if (!net_) return;
    for (auto& [peer, o] : opening_) {
      if (o.sendComm) (void)net_->closeSend(o.sendComm);
      if (o.recvComm) (void)net_->closeRecv(o.recvComm);
    }
    opening_.clear();
    for (auto& [peer, l] : listening_) {
      if (l.comm) (void)net_->closeListen(l.comm);
    }
    listening_.clear();
  }

  std::unique_ptr<NetSource> source_;
  NetPlugin* net_ = nullptr;       // owned by the source
  std::vector<NetDevice> devices_;  // those taking host memory
  std::map<int, Listening> listening_;
  std::map<int, Opening> opening_;
  std::shared_ptr<PeerWatch> watch_;  // null where the source watches its peers
};

}  // namespace

std::unique_ptr<Transport> makeNetTransport(std::unique_ptr<NetSource> source) {
  return std::make_unique<NetTransport>(std::move(source));
}

}  // namespace hcl
