// Planner::buildTable: prices the allowed algorithms with the schedule replay.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

PlanChoice Planner::priceBucket(CollKind kind, int bucket, const LinkGraph& graph, const Topology& topology,
                                size_t chunkBytes, StepPool& pool) const {
  const size_t bytes = PlanTable::bucketBytes(bucket);
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
    const ScheduleEstimate est = priceAlgorithm(*e, graph, topology, bytes, chunkBytes, cpuFamily_, sharedCpus_, pool);
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
  PlanChoice choice;
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
  return choice;
}

PlanTable Planner::buildTable(const LinkGraph& graph, const Topology& topology, size_t chunkBytes) const {
  PlanTable table;
  table.graph = graph;
  table.topology = topology;
  table.choices.resize(allowed_.size());
  StepPool pool;
  // Above kPricedEveryBucketUpTo ranks the odd buckets are priced only
  // where the even ones around them chose differently; elsewhere they take
  // that choice, with an estimate between the two (sizes double from
  // bucket to bucket, so the geometric mean).
  const bool everyBucket = graph.nranks <= kPricedEveryBucketUpTo;
  for (CollKind kind : kPlannedKinds) {
    auto& perBucket = table.choices[static_cast<size_t>(kind)];
    perBucket.resize(PlanTable::kBuckets);
    // Largest first: the pool's storage then fits every smaller size after it.
    for (int b = PlanTable::kBuckets - 1; b >= 0; --b) {
      const bool pricedFirst = everyBucket || b % 2 == 0 || b == PlanTable::kBuckets - 1;
      if (pricedFirst) perBucket[static_cast<size_t>(b)] = priceBucket(kind, b, graph, table.topology, chunkBytes, pool);
    }
    if (everyBucket) continue;
    // The odd buckets below the last, largest first.
    const int topOdd = PlanTable::kBuckets - 2 - (PlanTable::kBuckets % 2 == 0 ? 1 : 0);
    const auto defaultAt = [&](int bucket, bool peerAccess) {
      return fallback(kind, PlanTable::bucketBytes(bucket), graph.nranks, peerAccess);
    };
    for (int b = topOdd; b >= 1; b -= 2) {
      const PlanChoice& above = perBucket[static_cast<size_t>(b + 1)];
      const PlanChoice& below = perBucket[static_cast<size_t>(b - 1)];
      PlanChoice& choice = perBucket[static_cast<size_t>(b)];
      // Where the registry's default changes the bucket is judged against
      // another default than its neighbours were: priced too.
      const bool defaultChanges = defaultAt(b, peerAccess_) != defaultAt(b - 1, peerAccess_) ||
                                  defaultAt(b, peerAccess_) != defaultAt(b + 1, peerAccess_);
      if (above.algorithm.empty() || above.algorithm != below.algorithm || defaultChanges) {
        choice = priceBucket(kind, b, graph, table.topology, chunkBytes, pool);
        continue;
      }
      choice = above;
      choice.estimatedUs = std::sqrt(above.estimatedUs * below.estimatedUs);
      choice.candidates = fmt::format("not priced: {} on both sides ({} ranks)", above.algorithm, graph.nranks);
      if (!choice.withoutPeerAccess.empty()) {
        const AlgorithmEntry* plain = defaultAt(b, false);
        choice.withoutPeerAccess = plain ? plain->name : "";
      }
    }
  }
  return table;
}

}  // namespace hcl
