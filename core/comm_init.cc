#include "core/comm_init.h"

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "core/comm_plan.h"
#include "core/cpu_family.h"
#include "core/fd_limit.h"
#include "core/host_cpus.h"
#include "core/host_identity.h"
#include "core/link_probe.h"
#include "core/log.h"
#include "core/no_throw.h"
#include "core/params.h"
#include "core/shared_gpu_warning.h"
#include "transports/net_choice.h"
#include "transports/prepared_blobs.h"

namespace hcl {
namespace {

PeerInfo describeSelf(int rank, const Device& device) {
  PeerInfo self;
  self.rank = rank;
  self.hostId = hostIdentity();
  self.networkStack = networkStackIdentity();
  self.pid = getpid();
  self.processToken = processToken();
  self.deviceKind = device.kind();
  self.vendor = device.vendor();
  self.deviceIndex = device.index();
  self.shmEnabled = !paramBool("HCL_SHM_DISABLE");
  self.cpuMask = currentCpuMask();
  if (device.kind() != DeviceKind::Cpu) {
    std::string whyNot;
    if (paramBool("HCL_IPC_DISABLE")) {
      whyNot = "HCL_IPC_DISABLE is set";
    } else {
      self.ipcCapable = device.ipcSupported(&whyNot);
    }
    if (!self.ipcCapable) log::info(log::Init, "rank {}: no device IPC ({}); device buffers stage through host memory", rank, whyNot);
  }
  return self;
}

// Device buffers go straight to a transport only where it can register them
// and the device can export them; otherwise they are staged through pinned
// host memory. The decision is logged per transport in use.
void logGpuDirect(const Device& device, const std::vector<std::unique_ptr<Transport>>& transports,
                  const std::vector<std::vector<int>>& peersByKind) {
  if (device.kind() == DeviceKind::Cpu) return;
  const GpuDirectSupport support = device.gpuDirect();
  for (size_t k = 0; k < transports.size(); ++k) {
    if (peersByKind[k].empty()) continue;
    const Transport& t = *transports[k];
    const bool exportable = support.dmabuf || support.peermem;
    const bool direct = exportable && t.canRegisterDeviceMemory(device);
    log::info(static_cast<log::Subsys>(log::Init | log::Net), "GPU-direct {} for {}: {}", direct ? "on" : "off",
              toString(t.kind()),
              direct ? support.detail
                     : !exportable ? "the device cannot export its memory (" + support.detail + "); staging through host memory"
                                   : std::string("the transport cannot register device memory; staging through host memory"));
  }
}

// Slices of a message are matched by size between ranks, so ranks with
// different slice sizes could never complete a call: refuse at init, on
// every rank alike (all see the same peer table), naming the setting.
Status checkSharedSettings(const std::vector<PeerInfo>& peers) {
  const auto check = [&](const char* name, uint64_t PeerInfo::*field) -> Status {
    for (const PeerInfo& p : peers) {
      if (p.*field != peers[0].*field) {
        return invalidUsage(fmt::format("{} differs between ranks (rank 0: {}, rank {}: {}); set the same value on "
                                        "every rank",
                                        name, peers[0].*field, p.rank, p.*field));
      }
    }
    return {};
  };
  HCL_TRY(check("HCL_CHUNK_BYTES", &PeerInfo::chunkBytes));
  HCL_TRY(check("HCL_STAGE_CHUNK_BYTES", &PeerInfo::stageChunkBytes));
  HCL_TRY(check("HCL_PROBE", &PeerInfo::probeLinks));
  return check("HCL_PEER_WATCH", &PeerInfo::peerWatch);
}

// With more ranks of this communicator on the host than CPUs they may run
// on together, a rank that busy-polls holds a CPU its peer needs to make the
// progress it waits for: waits yield at once instead (what Open MPI does when
// it finds itself oversubscribed), unless HCL_SPIN_US was set. Ranks pinned
// to a CPU each are not oversubscribed, however few CPUs each one sees.
void avoidSpinningWhenOversubscribed(Communicator& comm) {
  if (paramSetByUser("HCL_SPIN_US")) return;
  const std::string& host = comm.peers()[static_cast<size_t>(comm.rank())].hostId;
  if (hostOversubscribed(comm.peers(), host)) {
    comm.setSpinUs(0);
    log::info(log::Init, "rank {}: the ranks on this host outnumber the CPUs they may run on: waits yield instead of "
              "busy-polling", comm.rank());
  }
}

// The links about to be set up, and what else a communicator opens while
// it runs (memfds of shared scratch, its rescue port), must fit under the
// descriptor limit; a shortfall is only warned of, as the count is an
// upper estimate and setup reports a real one. The claim is held until
// the links are up.
DescriptorClaim makeDescriptorRoom(int rank, const std::vector<std::unique_ptr<Transport>>& transports,
                                   const std::vector<std::vector<int>>& peersByKind) {
  constexpr size_t kBesideLinks = 64;
  size_t coming = kBesideLinks;
  for (size_t k = 0; k < transports.size(); ++k) coming += peersByKind[k].size() * transports[k]->descriptorsPerPeer();
  DescriptorClaim claim;
  if (const Status room = ensureDescriptorRoom(rank, coming, "this communicator's links", claim); !room.ok()) {
    log::warn(log::Init, "{}", room.message());
  }
  return claim;
}

}  // namespace

CommSettings settingsFromParams(const hclConfig_t* config) {
  CommSettings s;
  s.timeoutMs = paramInt("HCL_TIMEOUT_MS");
  s.chunkBytes = static_cast<size_t>(std::max<int64_t>(4096, paramInt("HCL_CHUNK_BYTES")));
  s.algoOverride = paramString("HCL_ALGO");
  s.spinUs = paramInt("HCL_SPIN_US");
  s.stageChunkBytes = static_cast<size_t>(std::max<int64_t>(4096, paramInt("HCL_STAGE_CHUNK_BYTES")));
  s.stageSlots = static_cast<int>(std::clamp<int64_t>(paramInt("HCL_STAGE_SLOTS"), 2, 16));
  s.blocking = paramBool("HCL_COMM_BLOCKING");
  s.windowStaging = static_cast<int>(paramInt("HCL_WINDOW_STAGING"));
  s.hugePagesAfter = static_cast<uint32_t>(paramInt("HCL_HUGE_PAGES_AFTER"));
  if (const char* name = configCommName(config)) s.name = name;
  // As NCCL: the environment (NCCL_NET) overrides config->netName.
  if (const ParamValue net = resolveParam("HCL_NET"); net.source != ParamSource::Default) {
    s.netName = net.text;
    s.netNameFrom = net.origin;
  } else if (config && config->size >= offsetof(hclConfig_t, netName) + sizeof(config->netName) &&
             config->netName && *config->netName) {
    s.netName = config->netName;
    s.netNameFrom = "config->netName";
  }
  if (config) {
    if (config->size >= offsetof(hclConfig_t, blocking) + sizeof(int) && config->blocking != HCL_CONFIG_UNDEF_INT) {
      s.blocking = config->blocking != 0;
    }
  }
  return s;
}

const char* configCommName(const hclConfig_t* config) {
  if (!config || config->size < offsetof(hclConfig_t, commName) + sizeof(config->commName)) return nullptr;
  return config->commName;
}

uint64_t rootCommTag(const uint8_t secret[16]) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 16; ++i) h = (h ^ secret[i]) * 0x100000001b3ull;
  return h;
}

namespace {

Status initCommunicatorThrowing(Oob& oob, int nranks, int rank, const uint8_t secret[16], uint64_t commTag,
                                const CommSettings& settings, const std::atomic<bool>* cancel,
                                std::shared_ptr<Communicator>& out) {
  const auto start = std::chrono::steady_clock::now();
  auto comm = std::make_shared<Communicator>(rank, nranks, secret, commTag, settings);
  log::setThreadRank(rank);

  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  std::memcpy(ctx.secret, secret, sizeof ctx.secret);
  ctx.commTag = commTag;
  ctx.timeoutMs = settings.timeoutMs;
  // Nothing else can reach the communicator before it is returned.
  ctx.abortFlag = cancel ? cancel : &comm->abortFlag();
  ctx.net = parseNetRequest(settings.netName, settings.netNameFrom);

  PeerInfo self = describeSelf(rank, comm->device());
  self.chunkBytes = settings.chunkBytes;
  self.stageChunkBytes = settings.stageChunkBytes;
  self.probeLinks = paramBool("HCL_PROBE") ? 1 : 0;
  self.peerWatch = paramBool("HCL_PEER_WATCH") ? 1 : 0;
  self.netName = settings.netName;
  self.netNameFrom = settings.netNameFrom;
  std::vector<std::unique_ptr<Transport>> transports;
  for (TransportKind k : allTransportKinds()) transports.push_back(makeTransport(k));
  // Only TCP needs a listener, and only when some peer may be off-host or
  // shared memory is off; opening one is cheap, so always do it.
  for (auto& t : transports) HCL_TRY(t->listen(ctx, self));
  if (!self.addresses.empty()) {
    RescuePort rescue;
    if (const Status held = rescue.open(self.addresses.front().ip); held.ok()) {
      self.rescueIp = self.addresses.front().ip;
      self.rescuePort = rescue.port();
      comm->holdRescuePort(std::move(rescue));
    } else {
      log::info(log::Init, "rank {}: no rescue port, so a failure cannot be shrunk away: {}", rank, held.message());
    }
  }

  std::vector<std::vector<uint8_t>> blobs;
  HCL_TRY(oob.allgather(self.serialize(), blobs));
  std::vector<PeerInfo> peers(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const auto& b = blobs[static_cast<size_t>(r)];
    if (!PeerInfo::deserialize(b.data(), b.size(), peers[static_cast<size_t>(r)]) ||
        peers[static_cast<size_t>(r)].rank != r) {
      return internalError(fmt::format("rank {}: malformed peer info from rank {}", rank, r));
    }
  }

  HCL_TRY(checkSharedSettings(peers));

  std::vector<Link> links(static_cast<size_t>(nranks));
  std::vector<std::vector<int>> peersByKind(allTransportKinds().size());
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    links[static_cast<size_t>(p)] = selectLink(self, peers[static_cast<size_t>(p)]);
    peersByKind[static_cast<size_t>(links[static_cast<size_t>(p)].kind)].push_back(p);
  }
  HCL_TRY(checkRequestedNet(ctx.net, self, peers, links));
  ctx.peers = &peers;
  ctx.links = &links;

  DescriptorClaim linkDescriptors = makeDescriptorRoom(rank, transports, peersByKind);
  for (size_t k = 0; k < transports.size(); ++k) {
    if (!peersByKind[k].empty()) HCL_TRY(transports[k]->prepare(ctx, peersByKind[k]));
  }
  std::vector<std::vector<uint8_t>> toEach(static_cast<size_t>(nranks)), prepared;
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) toEach[static_cast<size_t>(p)] = packPreparedBlobs(transports, p);
  }
  HCL_TRY(oob.alltoall(toEach, prepared));
  ctx.prepared = &prepared;
  std::vector<std::unique_ptr<Connection>> connections(static_cast<size_t>(nranks));
  for (size_t k = 0; k < transports.size(); ++k) {
    if (!peersByKind[k].empty()) HCL_TRY(transports[k]->connect(ctx, peersByKind[k], connections));
  }
  HCL_TRY(oob.barrier());
  for (auto& t : transports) t->finish();
  linkDescriptors = {};  // they are open now

  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    const Link& l = links[static_cast<size_t>(p)];
    log::info(static_cast<log::Subsys>(log::Init | log::Net), "rank {} -> rank {} via {}: {}", rank, p,
              connections[static_cast<size_t>(p)]->describe(), l.reason);
  }
  logGpuDirect(comm->device(), transports, peersByKind);
  if (const std::string w = sharedGpuWarning(peers, rank, std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")); !w.empty()) {
    log::warn(log::Init, "{}", w);
  }
  comm->setTopology(std::move(peers), std::move(links), std::move(transports), std::move(connections));
  if (comm->ipc()) {
    log::info(static_cast<log::Subsys>(log::Init | log::P2P), "rank {}: all {} ranks share {} memory by IPC on host {}",
              rank, nranks, comm->device().vendor(), self.hostId);
  }
  avoidSpinningWhenOversubscribed(*comm);
  comm->setSharedCpus(anyHostOversubscribed(comm->peers()));
  if (std::vector<int> order = sharedCpuPairingOrder(comm->peers()); !order.empty()) {
    log::info(log::Tuning, "rank {}: ranks share CPUs; their places in recursive doubling, by rank: {}", rank,
              fmt::join(order, ","));
    comm->setPairingOrder(std::move(order));
  }
  comm->setCpuFamily(hostCpuFamily());
  log::info(log::Tuning, "rank {}: CPU family {} (thresholds measured per family apply to peer access)", rank,
            toString(comm->cpuFamily()));
  std::vector<const Connection*> linksInUse;
  for (int p = 0; p < nranks; ++p) linksInUse.push_back(p == rank ? nullptr : comm->connection(p));
  bool peerAccess = false;
  HCL_TRY(agreeOnPeerAccess(oob, linksInUse, peerAccess));
  comm->setPeerAccess(peerAccess);
  std::vector<LinkModelRule> measured;
  if (self.probeLinks) HCL_TRY(probeLinks(oob, comm, measured));
  std::shared_ptr<const PlanTable> plan;
  HCL_TRY(agreeOnPlan(oob, comm->peers(), comm->planner(), settings.chunkBytes, measured, plan));
  if (plan) comm->setPlanTable(std::move(plan));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log::info(log::Init, "Init COMPLETE rank {} nranks {} host {} pid {} - {:.1f} ms", rank, nranks,
            self.hostId, self.pid, ms);
  out = std::move(comm);
  return {};
}

}  // namespace

Status initCommunicator(Oob& oob, int nranks, int rank, const uint8_t secret[16], uint64_t commTag,
                        const CommSettings& settings, const std::atomic<bool>* cancel,
                        std::shared_ptr<Communicator>& out) {
  const Status s = noThrow("communicator init", [&] {
    return initCommunicatorThrowing(oob, nranks, rank, secret, commTag, settings, cancel, out);
  });
  if (!s.ok()) oob.leaveFailed(s);
  return s;
}

}  // namespace hcl
