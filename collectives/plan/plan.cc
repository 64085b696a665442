#include "collectives/plan/plan.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/log.h"

namespace hcl {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    std::string part = trim(std::string(s.substr(start, end - start)));
    if (!part.empty()) parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

constexpr int kLastKind = static_cast<int>(CollKind::Control);

// The collective a clause names ("allreduce : ring" -> allreduce), if any.
std::optional<CollKind> clauseKind(const std::string& name) {
  const std::string wanted = lower(trim(name));
  for (int k = 1; k < kLastKind; ++k) {
    if (wanted == collKindName(static_cast<CollKind>(k))) return static_cast<CollKind>(k);
  }
  return std::nullopt;
}

// The algorithm list that applies to `kind`: the "coll:" clause for it if
// any, else the clause without a collective prefix.
std::string clauseFor(const std::string& spec, CollKind kind) {
  std::string generic;
  for (const std::string& clause : split(spec, ';')) {
    const size_t colon = clause.find(':');
    if (colon == std::string::npos) {
      generic = clause;
    } else if (clauseKind(clause.substr(0, colon)) == kind) {
      return trim(clause.substr(colon + 1));
    }
  }
  return generic;
}

bool hasAlgorithm(const std::string& name, std::optional<CollKind> kind) {
  const std::string n = lower(name);
  const auto table = algorithmTable();
  return std::any_of(table.begin(), table.end(),
                     [&](const AlgorithmEntry& e) { return n == e.name && (!kind || e.kind == *kind); });
}

}  // namespace

std::vector<std::string> overrideProblems(const std::string& spec) {
  std::vector<std::string> problems;
  for (const std::string& clause : split(spec, ';')) {
    const size_t colon = clause.find(':');
    std::optional<CollKind> kind;
    std::string list = clause;
    if (colon != std::string::npos) {
      kind = clauseKind(clause.substr(0, colon));
      if (!kind) {
        problems.push_back(fmt::format("'{}' is not a collective", trim(clause.substr(0, colon))));
        continue;
      }
      list = trim(clause.substr(colon + 1));
    }
    if (!list.empty() && list[0] == '^') list.erase(0, 1);
    for (const std::string& name : split(list, ',')) {
      if (!hasAlgorithm(name, kind)) {
        problems.push_back(kind ? fmt::format("'{}' is not an algorithm of {}", name, collKindName(*kind))
                                : fmt::format("'{}' is not an algorithm", name));
      }
    }
  }
  return problems;
}

const char* collKindName(CollKind k) {
  switch (k) {
    case CollKind::AllReduce: return "allreduce";
    case CollKind::Broadcast: return "broadcast";
    case CollKind::Reduce: return "reduce";
    case CollKind::AllGather: return "allgather";
    case CollKind::ReduceScatter: return "reducescatter";
    case CollKind::AlltoAll: return "alltoall";
    case CollKind::Gather: return "gather";
    case CollKind::Scatter: return "scatter";
    case CollKind::SendRecv: return "sendrecv";
    case CollKind::Control: return "control";
  }
  return "unknown";
}

CallBufferBytes callBufferBytes(const CollArgs& a) {
  const size_t block = a.count * dataTypeSize(a.type);
  const size_t all = block * static_cast<size_t>(a.nranks);
  const bool root = a.rank == a.root;
  switch (a.kind) {
    case CollKind::AllReduce: return {block, block};
    case CollKind::Broadcast: return {root ? block : 0, block};
    case CollKind::Reduce: return {block, root ? block : 0};
    case CollKind::AllGather: return {block, all};
    case CollKind::ReduceScatter: return {all, block};
    case CollKind::AlltoAll: return {all, all};
    case CollKind::Gather: return {block, root ? all : 0};
    case CollKind::Scatter: return {root ? all : 0, block};
    default: return {};
  }
}

Planner::Planner(std::string_view overrideSpec) : spec_(overrideSpec) {
  for (const std::string& problem : overrideProblems(spec_)) {
    log::warn(log::Tuning, "HCL_ALGO '{}': {}; ignoring it", spec_, problem);
  }
  allowed_.resize(kLastKind + 1);
  for (int k = 1; k <= kLastKind; ++k) allowed_[static_cast<size_t>(k)] = allowed(static_cast<CollKind>(k));
}

std::vector<const AlgorithmEntry*> Planner::allowed(CollKind kind) {
  std::vector<const AlgorithmEntry*> candidates;
  for (const AlgorithmEntry& e : algorithmTable()) {
    if (e.kind == kind) candidates.push_back(&e);
  }
  const std::string clause = clauseFor(spec_, kind);
  if (candidates.empty() || clause.empty()) return candidates;
  const bool exclude = clause[0] == '^';
  const auto names = split(exclude ? clause.substr(1) : clause, ',');
  std::vector<const AlgorithmEntry*> kept;
  for (const AlgorithmEntry* e : candidates) {
    const bool listed = std::any_of(names.begin(), names.end(), [&](const std::string& n) { return lower(n) == e->name; });
    if (listed != exclude) kept.push_back(e);
    if (listed && !exclude) named_.push_back(e);
  }
  // An algorithm for every size and every communicator must remain, or some
  // messages would have none. Naming one lifts its lower bounds (usable()).
  const auto universal = [&](const AlgorithmEntry* e) {
    const bool named = !exclude && std::find(named_.begin(), named_.end(), e) != named_.end();
    const bool noLowerBounds = e->minBytes == 0 && e->minTotalBytes == 0 && e->minShardBytes == 0 &&
                               e->minBytesSharedCpus == 0 && e->minBytesSharedCpusPowerOfTwo == 0 &&
                               e->byFamily.empty() && !e->needsOwnCpu &&
                               e->maxRanks == 0;
    return e->maxBytes == 0 && !e->needsPeerAccess && (named || noLowerBounds);
  };
  if (std::none_of(kept.begin(), kept.end(), universal)) {
    const AlgorithmEntry* fallback = *std::find_if(candidates.begin(), candidates.end(), universal);
    log::warn(log::Tuning, "HCL_ALGO '{}' leaves {} without an algorithm for every size; adding {} where none of "
              "the others runs", spec_, collKindName(kind), fallback->name);
    kept.push_back(fallback);
    lastResort_.push_back(fallback);
  }
  return kept;
}

bool Planner::usable(const AlgorithmEntry& e, size_t bytes, int nranks, bool peerAccess) const {
  // minBytes, minTotalBytes, minShardBytes and maxRanks say where an
  // algorithm starts to pay; one named in HCL_ALGO is used beyond them too.
  // maxBytes is a hard limit.
  const bool named = std::find(named_.begin(), named_.end(), &e) != named_.end();
  const size_t ranks = static_cast<size_t>(std::max(nranks, 1));
  size_t minBytes = e.minBytes, minTotalBytes = e.minTotalBytes;
  for (const FamilyAdmission& f : e.byFamily) {
    if (f.family != cpuFamily_) continue;
    minBytes = sharedCpus_ ? f.minBytesSharedCpus.value_or(f.minBytes) : f.minBytes;
    minTotalBytes = f.minTotalBytes;
  }
  const bool powerOfTwo = ranks >= 2 && (ranks & (ranks - 1)) == 0;
  const bool bigEnough = bytes >= minBytes && bytes >= (minTotalBytes + ranks - 1) / ranks &&
                         bytes / ranks >= e.minShardBytes && (!sharedCpus_ || bytes >= e.minBytesSharedCpus) &&
                         (!sharedCpus_ || !powerOfTwo || bytes >= e.minBytesSharedCpusPowerOfTwo);
  return (e.maxBytes == 0 || bytes <= e.maxBytes) && (bigEnough || named) && (peerAccess || !e.needsPeerAccess) &&
         (e.maxRanks == 0 || nranks <= e.maxRanks || named) && (!e.needsOwnCpu || !sharedCpus_ || named);
}

bool Planner::lastResort(const AlgorithmEntry& e) const {
  return std::find(lastResort_.begin(), lastResort_.end(), &e) != lastResort_.end();
}

bool Planner::chosenAlgorithmRuns(CollKind kind, size_t bytes, int nranks, bool peerAccess) const {
  const auto& allowed = allowed_[static_cast<size_t>(kind)];
  return std::any_of(allowed.begin(), allowed.end(), [&](const AlgorithmEntry* e) {
    return !lastResort(*e) && usable(*e, bytes, nranks, peerAccess);
  });
}

const AlgorithmEntry* Planner::fallback(CollKind kind, size_t bytes, int nranks, bool peerAccess) const {
  // The last resort comes last in the allowed list, after every chosen one.
  for (const AlgorithmEntry* e : allowed_[static_cast<size_t>(kind)]) {
    if (usable(*e, bytes, nranks, peerAccess)) return e;
  }
  return nullptr;
}

const AlgorithmEntry* Planner::choose(const CollArgs& args) const {
  const size_t bytes = args.count * dataTypeSize(args.type);
  // Every rank runs the same operation, so all of them drop peer access alike.
  const bool peerAccess = peerAccess_ && !args.rankDependentLoad;
  if (table_) {
    // The table is authoritative, even over this rank's own HCL_ALGO: it
    // came from one rank, and every rank must run the same algorithm.
    if (const PlanChoice* c = table_->find(args.kind, bytes)) {
      const auto named = [&](const std::string& name) -> const AlgorithmEntry* {
        for (const AlgorithmEntry& e : algorithmTable()) {
          // The bucket's size range may start below minBytes; the table
          // still decides, so every rank agrees.
          if (e.kind == args.kind && name == e.name && (e.maxBytes == 0 || bytes <= e.maxBytes) &&
              (peerAccess || !e.needsPeerAccess))
            return &e;
        }
        return nullptr;
      };
      if (const AlgorithmEntry* e = named(c->algorithm)) return e;
      if (!peerAccess && !c->withoutPeerAccess.empty()) {
        if (const AlgorithmEntry* e = named(c->withoutPeerAccess)) return e;
      }
    }
  }
  return fallback(args.kind, bytes, args.nranks, peerAccess);
}

const char* Planner::algorithmFor(CollKind kind, size_t bytes, int nranks) const {
  CollArgs probe;
  probe.kind = kind;
  probe.nranks = nranks;
  probe.type = hclUint8;
  probe.count = bytes;
  return algorithmFor(probe);
}

const char* Planner::algorithmFor(const CollArgs& args) const {
  const AlgorithmEntry* e = choose(args);
  return e ? e->name : "none";
}

void Planner::setPairingOrder(std::vector<int> order) {
  std::vector<bool> seen(order.size(), false);
  for (int place : order) {
    if (place < 0 || static_cast<size_t>(place) >= order.size() || seen[static_cast<size_t>(place)]) {
      pairingOrder_.clear();
      return;
    }
    seen[static_cast<size_t>(place)] = true;
  }
  pairingOrder_ = std::move(order);
}

Schedule Planner::plan(const CollArgs& args) const {
  const AlgorithmEntry* e = choose(args);
  if (!e) return Schedule{};
  CollArgs a = args;
  a.cpuFamily = cpuFamily_;
  a.sharedCpus = sharedCpus_;
  if (!pairingOrder_.empty() && pairingOrder_.size() == static_cast<size_t>(a.nranks)) a.pairingOrder = &pairingOrder_;
  if (a.topology == nullptr && table_ && !table_->topology.flat()) a.topology = &table_->topology;
  return e->generate(a);
}

}  // namespace hcl
