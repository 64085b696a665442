// Planner::buildTable: prices the allowed algorithms with the schedule replay.
#include <fmt/format.h>

#include <algorithm>

#include "collectives/plan/plan.h"
#include "collectives/plan/schedule_timing.h"

namespace hcl {
namespace {

// The default must be this much slower before the model overrides it; the
// registry's order encodes measurements the model does not capture.
constexpr double kOverrideMargin = 0.9;

constexpr CollKind kPlannedKinds[] = {CollKind::AllReduce,     CollKind::Broadcast, CollKind::Reduce,
                                      CollKind::AllGather,     CollKind::ReduceScatter,
                                      CollKind::AlltoAll,      CollKind::Gather,    CollKind::Scatter};

ScheduleEstimate priceAlgorithm(const AlgorithmEntry& e, const LinkGraph& graph, const Topology& topology,
                                size_t bytes, size_t chunkBytes, CpuFamily family, bool sharedCpus) {
  std::vector<Schedule> schedules;
  schedules.reserve(static_cast<size_t>(graph.nranks));
  for (int r = 0; r < graph.nranks; ++r) {
    CollArgs a;
    a.kind = e.kind;
    a.rank = r;
    a.nranks = graph.nranks;
    a.type = hclFloat32;
    a.count = std::max<size_t>(1, bytes / 4);
    a.chunkBytes = chunkBytes;
    a.topology = topology.flat() ? nullptr : &topology;
    a.cpuFamily = family;
    a.sharedCpus = sharedCpus;
    schedules.push_back(e.generate(a));
  }
  return estimateSchedules(schedules, graph);
}

std::vector<std::string> classNames(const ScheduleEstimate& est, const LinkGraph& graph) {
  std::vector<std::string> names;
  for (size_t c = 0; c < est.classesUsed.size(); ++c)
    if (est.classesUsed[c]) names.push_back(graph.classNames[c]);
  return names;
}

}  // namespace

PlanTable Planner::buildTable(const LinkGraph& graph, const Topology& topology, size_t chunkBytes) const {
  PlanTable table;
  table.graph = graph;
  table.topology = topology;
  table.choices.resize(allowed_.size());
  for (CollKind kind : kPlannedKinds) {
    auto& perBucket = table.choices[static_cast<size_t>(kind)];
    perBucket.resize(PlanTable::kBuckets);
    for (int b = 0; b < PlanTable::kBuckets; ++b) {
      const size_t bytes = PlanTable::bucketBytes(b);
      const AlgorithmEntry* dflt = fallback(kind, bytes, graph.nranks, peerAccess_);
      const AlgorithmEntry* best = nullptr;
      ScheduleEstimate bestEst, dfltEst;
      std::string candidates;
      const bool chosenRuns = chosenAlgorithmRuns(kind, bytes, graph.nranks, peerAccess_);
      for (const AlgorithmEntry* e : allowed_[static_cast<size_t>(kind)]) {
        if (!usable(*e, bytes, graph.nranks, peerAccess_) || (chosenRuns && lastResort(*e))) continue;
        const ScheduleEstimate est = priceAlgorithm(*e, graph, table.topology, bytes, chunkBytes, cpuFamily_, sharedCpus_);
        candidates += fmt::format("{}{} {}", candidates.empty() ? "" : ", ", e->name,
                                  est.valid ? fmt::format("{:.1f} us", est.us) : std::string("invalid"));
        if (!est.valid) continue;
        if (e == dflt) dfltEst = est;
        if (!best || est.us < bestEst.us) {
          best = e;
          bestEst = est;
        }
      }
      PlanChoice& choice = perBucket[static_cast<size_t>(b)];
      // Direct access to peers' buffers is preferred wherever it is allowed:
      // the model prices its copies like messages, but it saves the
      // per-slice handshakes and copies that messages cost on one host.
      const bool measuredBest = dflt && dflt->needsPeerAccess;
      if (dflt && dfltEst.valid && (measuredBest || !best || bestEst.us >= dfltEst.us * kOverrideMargin)) {
        best = dflt;
        bestEst = dfltEst;
      }
      if (best) {
        choice.algorithm = best->name;
        choice.estimatedUs = bestEst.us;
        choice.linkClasses = classNames(bestEst, graph);
        // What a call that may not reach peers' buffers runs instead. Peer
        // access comes only with one host, where the registry's order is the
        // measured choice; taken from the building rank's list, as the rest
        // of the table, so that every rank agrees.
        if (best->needsPeerAccess) {
          if (const AlgorithmEntry* plain = fallback(kind, bytes, graph.nranks, false)) {
            choice.withoutPeerAccess = plain->name;
          }
        }
      }
      choice.candidates = std::move(candidates);
    }
  }
  return table;
}

}  // namespace hcl
