#include "core/comm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "collectives/plan/topology_derive.h"
#include "core/log.h"
#include "core/params.h"

namespace hcl {
namespace {

// Where ranks span several hosts the choice among ring, tree, rhd and hier
// matters most and their schedules are cheaper to replay (no window or
// direct schedules, which need one host), so such communicators are priced
// further.
constexpr int kMaxPlannedRanks = Planner::kPricedEveryBucketUpTo;
constexpr int kMaxPlannedRanksAcrossHosts = 64;

constexpr uint8_t kPlanOk = 0, kPlanFlat = 1, kPlanError = 2;

double tcpLatencyUs(NicKind kind) {
  switch (kind) {
    case NicKind::Ib: return 4;
    case NicKind::Roce: return 6;
    case NicKind::IpoIb: return 12;
    case NicKind::Loopback: return 10;
    case NicKind::Ethernet: return 25;
  }
  return 25;
}

Status readLinkModel(std::vector<LinkModelRule>& rules) {
  const std::string path = paramString("HCL_LINK_MODEL");
  if (path.empty()) return {};
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return invalidUsage(fmt::format("HCL_LINK_MODEL={}: is a directory, not a link model file", path));
  }
  std::ifstream in(path);
  if (!in) return invalidUsage(fmt::format("HCL_LINK_MODEL={}: cannot open the file", path));
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  if (!parseLinkModel(text.str(), rules, error)) return invalidUsage(fmt::format("HCL_LINK_MODEL={}: {}", path, error));
  return {};
}

std::string sizeText(size_t bytes) {
  if (bytes >= (size_t{1} << 30) && bytes % (size_t{1} << 30) == 0) return fmt::format("{}G", bytes >> 30);
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) return fmt::format("{}M", bytes >> 20);
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) return fmt::format("{}K", bytes >> 10);
  return fmt::format("{}", bytes);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

bool planWorthPricing(const std::vector<PeerInfo>& peers) {
  const int n = static_cast<int>(peers.size());
  if (n < 2) return false;
  if (n <= kMaxPlannedRanks) return true;
  if (n > kMaxPlannedRanksAcrossHosts) return false;
  return std::any_of(peers.begin(), peers.end(), [&](const PeerInfo& p) { return p.hostId != peers[0].hostId; });
}

namespace {

Status buildOnRankZero(const std::vector<PeerInfo>& peers, const Planner& planner, size_t chunkBytes,
                       const std::vector<LinkModelRule>& measured, std::vector<uint8_t>& blob) {
  std::vector<LinkModelRule> rules;
  HCL_TRY(readLinkModel(rules));
  LinkGraph graph = buildLinkGraph(peers);
  applyLinkModel(rules, graph);
  applyLinkModel(measured, graph);
  log::info(log::Net, "link table ({} ranks):\n{}", peers.size(), describeLinkTable(peers, graph));
  if (!planWorthPricing(peers)) {
    blob = {kPlanFlat};
    return {};
  }
  const PlanTable table = planner.buildTable(graph, deriveTopology(graph), chunkBytes);
  blob = {kPlanOk};
  const std::vector<uint8_t> body = table.serialize();
  blob.insert(blob.end(), body.begin(), body.end());
  return {};
}

}  // namespace

LinkCost defaultLinkCost(const Link& link) {
  switch (link.kind) {
    case TransportKind::Local: return {0.5, 10000};
    case TransportKind::Shm: return {1.0, 6000};
    case TransportKind::Tcp:
    case TransportKind::Ofi:
    case TransportKind::NetPlugin: break;
    case TransportKind::Ib: {
      // RDMA reaches about 95% of the line rate, without the host's TCP stack.
      const double mbps = link.speedMbps ? link.speedMbps : 100000.0;
      return {tcpLatencyUs(link.nicKind), mbps / 8 * 0.95};
    }
  }
  // Priced alike for now: the NIC's speed sets both. TCP reaches about 90% of a NIC's line rate; an unknown NIC counts as 10 Gbit/s.
  const double mbps = link.speedMbps ? link.speedMbps : 10000.0;
  return {tcpLatencyUs(link.nicKind), mbps / 8 * 0.9};
}

LinkGraph buildLinkGraph(const std::vector<PeerInfo>& peers) {
  LinkGraph graph;
  graph.nranks = static_cast<int>(peers.size());
  const size_t n = peers.size();
  graph.classOf.assign(n * n, -1);
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      const Link link = selectLink(peers[a], peers[b]);
      const int c = graph.addClass(link.linkClass, defaultLinkCost(link),
                                   link.kind == TransportKind::Local || link.kind == TransportKind::Shm);
      graph.classOf[a * n + b] = graph.classOf[b * n + a] = c;
    }
  }
  return graph;
}

std::string describeLinkTable(const std::vector<PeerInfo>& peers, const LinkGraph& graph) {
  std::string out;
  for (size_t a = 0; a < peers.size(); ++a) {
    for (size_t b = a + 1; b < peers.size(); ++b) {
      const Link link = selectLink(peers[a], peers[b]);
      const LinkCost& cost = graph.costBetween(static_cast<int>(a), static_cast<int>(b));
      out += fmt::format("  {:>4} <-> {:<4} {:<5} class {:<16} alpha {:.1f} us, beta {:.1f} MB/s: {}\n", a, b,
                         toString(link.kind), link.linkClass, cost.alphaUs, cost.bytesPerUs, link.reason);
    }
  }
  return out;
}

std::string describePlanTable(const PlanTable& table) {
  std::string out;
  for (size_t k = 0; k < table.choices.size(); ++k) {
    const auto& perBucket = table.choices[k];
    if (perBucket.empty()) continue;
    size_t from = 0;
    for (int b = 0; b < PlanTable::kBuckets; ++b) {
      const PlanChoice& c = perBucket[static_cast<size_t>(b)];
      const bool last = b + 1 == PlanTable::kBuckets;
      if (!last && perBucket[static_cast<size_t>(b + 1)].algorithm == c.algorithm) continue;
      out += fmt::format("  {:<13} {:>5} .. {:<5} {:<8} at {}: {:.1f} us over {} (candidates: {})\n",
                         collKindName(static_cast<CollKind>(k)), sizeText(from),
                         last ? std::string("max") : sizeText(PlanTable::bucketBytes(b)), c.algorithm,
                         sizeText(PlanTable::bucketBytes(b)), c.estimatedUs, join(c.linkClasses), c.candidates);
      from = PlanTable::bucketBytes(b) + 1;
    }
  }
  for (size_t l = 0; l < table.topology.levels.size(); ++l) {
    out += fmt::format("  level {} groups:", l);
    for (int g : table.topology.levels[l]) out += fmt::format(" {}", g);
    out += "\n";
  }
  return out;
}

Status agreeOnPeerAccess(Oob& oob, const std::vector<const Connection*>& connections, bool& out) {
  bool mine = paramBool("HCL_DIRECT");
  for (const Connection* c : connections) mine = mine && (c == nullptr || c->peerMemoryAccess());
  std::vector<std::vector<uint8_t>> all;
  HCL_TRY(oob.allgather({static_cast<uint8_t>(mine ? 1 : 0)}, all));
  out = std::all_of(all.begin(), all.end(), [](const std::vector<uint8_t>& b) { return b.size() == 1 && b[0] == 1; });
  log::info(log::Tuning, "direct access to peers' buffers: {}", out ? "every link" : mine ? "not on every rank" : "no");
  return {};
}

Status agreeOnPlan(Oob& oob, const std::vector<PeerInfo>& peers, const Planner& planner, size_t chunkBytes,
                   const std::vector<LinkModelRule>& measured, std::shared_ptr<const PlanTable>& out) {
  std::vector<uint8_t> mine;
  if (oob.rank() == 0) {
    const Status built = buildOnRankZero(peers, planner, chunkBytes, measured, mine);
    if (!built.ok()) {
      mine = {kPlanError};
      mine.insert(mine.end(), built.message().begin(), built.message().end());
    }
  }
  std::vector<std::vector<uint8_t>> all;
  HCL_TRY(oob.allgather(mine, all));
  const std::vector<uint8_t>& blob = all[0];
  if (blob.empty()) return internalError("rank 0 sent an empty plan");
  if (blob[0] == kPlanError) return invalidUsage(std::string(blob.begin() + 1, blob.end()));
  if (blob[0] == kPlanFlat) return {};
  auto table = std::make_shared<PlanTable>();
  if (blob[0] != kPlanOk || !PlanTable::deserialize(blob.data() + 1, blob.size() - 1, *table))
    return internalError("malformed plan table from rank 0");
  if (oob.rank() == 0) log::info(log::Tuning, "plan ({} ranks):\n{}", peers.size(), describePlanTable(*table));
  out = std::move(table);
  return {};
}

}  // namespace hcl
