#include "transports/shm/shm_transport.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/host_cpus.h"
#include "core/log.h"
#include "core/params.h"
#include "transports/shm/shm_connection.h"
#include "transports/shm/shm_process.h"
#include "transports/shm/shm_segment.h"

namespace hcl {
namespace {

using shm::Segment;
using shm::SideInfo;

uint64_t randomNonce() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v == 0 ? 0x9e3779b97f4a7c15ull : v;
}

class ShmTransport final : public Transport {
 public:
  ShmTransport() : probeValue_(randomNonce()) {}
  ~ShmTransport() override { unlinkCreated(); }

  TransportKind kind() const override { return TransportKind::Shm; }

  Status listen(const TransportContext&, PeerInfo&) override { return {}; }

  Status prepare(const TransportContext& ctx, const std::vector<int>& peers) override {
    shm::Geometry geometry;
    HCL_TRY(geometryFromParams(geometry));
    for (int peer : peers) {
      HCL_TRY(checkPeerRank(ctx, peer, "prepare"));
      if (peer < ctx.rank) continue;  // the lower rank of a pair creates its segment
      if (segments_.count(peer) != 0) {
        return invalidUsage(
            fmt::format("rank {}: shm prepare() called twice for rank {}", ctx.rank, peer));
      }
      const std::string name = shm::segmentName(ctx.secret, ctx.commTag, ctx.rank, peer);
      std::shared_ptr<Segment> segment;
      HCL_TRY(Segment::create(name, geometry, ctx.rank, peer, segment));
      created_.push_back(name);
      attach(segment->header().side[0]);
      segments_[peer] = std::move(segment);
      log::trace(log::Shm, "rank {}: created shm segment {} for rank {} (slots per direction: {})", ctx.rank,
                 name, peer, shm::describeLanes(geometry));
    }
    return {};
  }

  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    const Deadline deadline(ctx.timeoutMs);
    int64_t threshold = paramInt("HCL_SHM_CMA_THRESHOLD");
    if (threshold < 0) {
      return invalidArgument(fmt::format("HCL_SHM_CMA_THRESHOLD={} must be >= 0", threshold));
    }
    // A single-copy sender waits until its reader has copied (host_cpus.h).
    if (!paramSetByUser("HCL_SHM_CMA_THRESHOLD") && ctx.peers &&
        hostOversubscribed(*ctx.peers, (*ctx.peers)[static_cast<size_t>(ctx.rank)].hostId)) {
      threshold = std::max(threshold, static_cast<int64_t>(kSharedCpusSingleCopyFrom));
    }
    if (out.size() < static_cast<size_t>(ctx.nranks)) out.resize(static_cast<size_t>(ctx.nranks));
    for (int peer : peers) HCL_TRY(checkPeerRank(ctx, peer, "connect"));

    // Attach to the segments lower ranks created first: the higher ranks wait
    // for us to attach, and this order means nobody waits on a chain of ranks.
    for (int peer : peers) {
      if (peer > ctx.rank) continue;
      std::shared_ptr<Segment> segment;
      HCL_TRY(openSegment(ctx, peer, deadline, segment));
      shm::SegmentHeader& h = segment->header();
      attach(h.side[1]);
      h.side[0].peerCanReadMemory.store(probe(ctx, peer, h.side[0]), std::memory_order_release);
      out[static_cast<size_t>(peer)] = makeConnection(ctx, peer, 1, segment, threshold);
      segments_[peer] = std::move(segment);
    }
    for (int peer : peers) {
      if (peer < ctx.rank) continue;
      auto it = segments_.find(peer);
      if (it == segments_.end()) {
        return invalidUsage(
            fmt::format("rank {}: shm connect() to rank {} without prepare()", ctx.rank, peer));
      }
      shm::SegmentHeader& h = it->second->header();
      HCL_TRY(waitForAttach(ctx, peer, h.side[1], deadline, it->second->name()));
      h.side[1].peerCanReadMemory.store(probe(ctx, peer, h.side[1]), std::memory_order_release);
      out[static_cast<size_t>(peer)] = makeConnection(ctx, peer, 0, it->second, threshold);
    }
    return {};
  }

  void finish() override { unlinkCreated(); }
  // A segment keeps its descriptor where the kernel cannot populate it.
  size_t descriptorsPerPeer() const override { return 1; }

 private:
  static Status checkPeerRank(const TransportContext& ctx, int peer, const char* phase) {
    if (peer < 0 || peer >= ctx.nranks || peer == ctx.rank) {
      return invalidArgument(fmt::format("rank {}: shm {}() got peer rank {} (nranks {})", ctx.rank,
                                         phase, peer, ctx.nranks));
    }
    return {};
  }

  // Publishes our probe, then (release) our pid, which tells the peer we are there.
  void attach(SideInfo& mine) {
    mine.probeAddress.store(reinterpret_cast<uintptr_t>(&probeValue_), std::memory_order_relaxed);
    mine.probeValue.store(probeValue_, std::memory_order_relaxed);
    mine.pid.store(::getpid(), std::memory_order_release);
  }

  static Status interrupted(const TransportContext& ctx, const Deadline& deadline, int peer,
                            const std::string& what) {
    if (ctx.abortFlag != nullptr && ctx.abortFlag->load(std::memory_order_acquire)) {
      return internalError(fmt::format(
          "rank {}: shm connect to rank {} aborted while waiting for {}", ctx.rank, peer, what));
    }
    if (deadline.expired()) {
      return remoteError(
          fmt::format("rank {}: timed out after {} ms waiting for {} (HCL_TIMEOUT_MS)", ctx.rank,
                      ctx.timeoutMs, what));
    }
    return {};
  }

  Status openSegment(const TransportContext& ctx, int peer, const Deadline& deadline,
                     std::shared_ptr<Segment>& out) {
    const std::string name = shm::segmentName(ctx.secret, ctx.commTag, peer, ctx.rank);
    Backoff backoff;
    for (;;) {
      bool missing = false;
      HCL_TRY(Segment::open(name, peer, ctx.rank, out, &missing));
      if (!missing) {
        // Mapped on both sides now, so the name has done its job; left until
        // the creator's finish(), a rank killed during the rest of the
        // connect (which may wait HCL_TIMEOUT_MS) would leave it in /dev/shm.
        ::shm_unlink(name.c_str());
        return {};
      }
      HCL_TRY(interrupted(ctx, deadline, peer,
                          fmt::format("rank {} to create shm segment {}", peer, name)));
      backoff.pause();
    }
  }

  static Status waitForAttach(const TransportContext& ctx, int peer, const SideInfo& theirs,
                              const Deadline& deadline, const std::string& name) {
    Backoff backoff;
    while (theirs.pid.load(std::memory_order_acquire) == 0) {
      HCL_TRY(interrupted(ctx, deadline, peer,
                          fmt::format("rank {} to open shm segment {}", peer, name)));
      backoff.pause();
    }
    return {};
  }

  // Can we process_vm_readv the peer's memory? Decides single copy for the
  // direction peer -> us.
  uint32_t probe(const TransportContext& ctx, int peer, const SideInfo& theirs) {
    const int64_t pid = theirs.pid.load(std::memory_order_acquire);
    const uint64_t address = theirs.probeAddress.load(std::memory_order_relaxed);
    const uint64_t expected = theirs.probeValue.load(std::memory_order_relaxed);
    uint64_t value = 0;
    int err = 0;
    const ssize_t n = shm::readProcessMemory(pid, address, &value, sizeof value, &err);
    if (n == static_cast<ssize_t>(sizeof value) && value == expected) return shm::kCmaAvailable;
    if (!loggedCmaFallback_) {
      loggedCmaFallback_ = true;
      const std::string why =
          n < 0 ? fmt::format("failed: {}", std::strerror(err))
                : std::string("read back a different value (another pid namespace?)");
      log::info(log::Shm,
                "rank {}: process_vm_readv from rank {} (pid {}) {}; shm copies through shared "
                "memory instead (single copy needs ptrace access: same user and "
                "kernel.yama.ptrace_scope=0, or CAP_SYS_PTRACE)",
                ctx.rank, peer, pid, why);
    }
    return shm::kCmaUnavailable;
  }

  std::unique_ptr<Connection> makeConnection(const TransportContext& ctx, int peer, int side,
                                             std::shared_ptr<Segment> segment, int64_t threshold) {
    const int64_t peerPid = segment->header().side[1 - side].pid.load(std::memory_order_acquire);
    shm::ConnectionConfig config;
    config.rank = ctx.rank;
    config.peer = peer;
    config.side = side;
    config.segment = std::move(segment);
    config.cmaThreshold = threshold;
    config.mapPeerMemory = paramBool("HCL_SHM_MAP");
    const int64_t streamStores = paramInt("HCL_SHM_STREAM_STORES");
    config.slotStores = streamStores < 0   ? shm::SlotStoreChoice::Mode::Measure
                        : streamStores > 0 ? shm::SlotStoreChoice::Mode::Streamed
                                           : shm::SlotStoreChoice::Mode::Cached;
    config.watchPeerPid = !shm::processInvisible(peerPid);
    if (!config.watchPeerPid) {
      log::info(log::Shm,
                "rank {}: pid {} of rank {} is not visible here (another pid namespace?); shm "
                "cannot notice if it exits",
                ctx.rank, peerPid, peer);
    }
    auto connection = shm::makeShmConnection(std::move(config));
    log::trace(log::Shm, "rank {} -> rank {}: {}", ctx.rank, peer, connection->describe());
    return connection;
  }

  void unlinkCreated() {
    for (const std::string& name : created_) ::shm_unlink(name.c_str());
    created_.clear();
  }

  const uint64_t probeValue_;  // read by peers' process_vm_readv probe
  bool loggedCmaFallback_ = false;
  std::vector<std::string> created_;  // names not yet unlinked
  std::map<int, std::shared_ptr<Segment>> segments_;
};

}  // namespace

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<ShmTransport>(); }

}  // namespace hcl
