// Planner::buildTable: prices the allowed algorithms with the schedule replay.
#include <fmt/format.h>

#include <algorithm>

#include "collectives/plan/plan.h"
#include "collectives/plan/schedule_timing.h"
#include "collectives/plan/step_pool.h"

namespace hcl {
namespace {

// The default must be this much slower before the model overrides it; the
// registry's order encodes measurements the model does not capture.
constexpr double kOverrideMargin = 0.9;

constexpr CollKind kPlannedKinds[] = {CollKind::AllReduce,     CollKind::Broadcast, CollKind::Reduce,
                                      CollKind::AllGather,     CollKind::ReduceScatter,
                                      CollKind::AlltoAll,      CollKind::Gather,    CollKind::Scatter};

ScheduleEstimate priceAlgorithm(const AlgorithmEntry& e, const LinkGraph& graph, const Topology& topology,
                                size_t bytes, size_t chunkBytes, CpuFamily family, bool sharedCpus, StepPool& pool) {
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
    a.stepPool = &pool;
    schedules.push_back(e.generate(a));
  }
  const ScheduleEstimate estimate = estimateSchedules(schedules, graph);
  for (Schedule& s : schedules) pool.give(std::move(s.steps));
  return estimate;
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
  StepPool pool;
  for (CollKind kind : kPlannedKinds) {
    auto& perBucket = table.choices[static_cast<size_t>(kind)];
    perBucket.resize(PlanTable::kBuckets);
    // Largest first: the pool's storage then fits every smaller size after it.
    for (int b = PlanTable::kBuckets - 1; b >= 0; --b) {
      const size_t bytes = PlanTable::bucketBytes(b);
      const AlgorithmEntry* dflt = fallback(kind, bytes, graph.nranks, peerAccess_);
      const AlgorithmEntry* best = nullptr;
      ScheduleEstimate bestEst, dfltEst;
      std::string candidates;
      const bool chosenRuns = chosenAlgorithmRuns(kind, bytes, graph.nranks, peerAccess_);
      const auto& allowed = allowed_[static_cast<size_t>(kind)];
      const auto runs = [&](const AlgorithmEntry* e) {
        return usable(*e, bytes, graph.nranks, peerAccess_) && !(chosenRuns && lastResort(*e));
      };
      const auto price = [&](const AlgorithmEntry* e) {
        const ScheduleEstimate est =
            priceAlgorithm(*e, graph, table.topology, bytes, chunkBytes, cpuFamily_, sharedCpus_, pool);
        candidates += fmt::format("{}{} {}", candidates.empty() ? "" : ", ", e->name,
                                  est.valid ? fmt::format("{:.1f} us", est.us) : std::string("invalid"));
        return est;
      };
      // A default that reaches peers' buffers is chosen whatever the model
      // says of the others (below), so they are priced only if it cannot be.
      const bool defaultDecides = dflt && dflt->needsPeerAccess && runs(dflt) &&
                                  std::find(allowed.begin(), allowed.end(), dflt) != allowed.end();
      if (defaultDecides) {
        dfltEst = price(dflt);
        if (dfltEst.valid) {
          best = dflt;
          bestEst = dfltEst;
          candidates += " (the measured choice where peers' buffers are reachable; the others are not priced)";
        }
      }
      for (const AlgorithmEntry* e : allowed) {
        if (best && defaultDecides) break;
        if (!runs(e) || (defaultDecides && e == dflt)) continue;
        const ScheduleEstimate est = price(e);
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
