#include "collectives/plan/plan.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/log.h"

namespace hcl {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    std::string part(s.substr(start, end - start));
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (!part.empty()) parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

// The algorithm list that applies to `kind`: the "coll:" clause for it if
// any, else the clause without a collective prefix.
std::string clauseFor(const std::string& spec, CollKind kind) {
  std::string generic;
  for (const std::string& clause : split(spec, ';')) {
    const size_t colon = clause.find(':');
    if (colon == std::string::npos) {
      generic = clause;
    } else if (lower(clause.substr(0, colon)) == lower(collKindName(kind))) {
      return clause.substr(colon + 1);
    }
  }
  return generic;
}

}  // namespace

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

Planner::Planner(std::string_view overrideSpec) : spec_(overrideSpec) {
  constexpr int kLastKind = static_cast<int>(CollKind::Control);
  chosen_.resize(kLastKind + 1, nullptr);
  for (int k = 1; k <= kLastKind; ++k) chosen_[static_cast<size_t>(k)] = choose(static_cast<CollKind>(k));
}

const AlgorithmEntry* Planner::choose(CollKind kind) const {
  std::vector<const AlgorithmEntry*> candidates;
  for (const AlgorithmEntry& e : algorithmTable()) {
    if (e.kind == kind) candidates.push_back(&e);
  }
  if (candidates.empty()) return nullptr;
  const std::string clause = clauseFor(spec_, kind);
  if (clause.empty()) return candidates.front();
  const bool exclude = clause[0] == '^';
  const auto names = split(exclude ? clause.substr(1) : clause, ',');
  auto listed = [&](const AlgorithmEntry* e) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return lower(n) == e->name; });
  };
  for (const AlgorithmEntry* e : candidates) {
    if (listed(e) != exclude) return e;
  }
  log::warn(log::Tuning, "HCL_ALGO '{}' allows no algorithm HCL has for {}; using {}", spec_,
            collKindName(kind), candidates.front()->name);
  return candidates.front();
}

const char* Planner::algorithmFor(CollKind kind) const {
  const AlgorithmEntry* e = chosen_[static_cast<size_t>(kind)];
  return e ? e->name : "none";
}

Schedule Planner::plan(const CollArgs& args) const {
  const AlgorithmEntry* e = chosen_[static_cast<size_t>(args.kind)];
  return e ? e->generate(args) : Schedule{};
}

}  // namespace hcl
