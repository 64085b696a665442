#include "perf/common/hcl_details.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "core/datatype.h"
#include "core/params.h"
#include "collectives/plan/topology_text.h"
#include "perf/common/hcl_status.h"
#include "perf/common/names.h"

namespace hcl::perf {
namespace {

int kindOf(const std::string& description) {
  std::string word;
  for (char c : description) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') break;
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (int k = 0; k < kTransportKinds - 1; ++k) {
    if (word == transportName(k)) return k;
  }
  return kTransportKinds - 1;
}

// Point-to-point tests: the peers follow from the test itself.
std::vector<int> p2pPeers(const CollectiveTest& coll, int rank, int nranks) {
  std::vector<int> peers;
  if (coll.needsPowerOfTwo) {  // hypercube
    for (int mask = 1; mask < nranks; mask <<= 1) peers.push_back(rank ^ mask);
  } else {
    peers = {(rank + 1) % nranks, (rank - 1 + nranks) % nranks};
  }
  return peers;
}

}  // namespace

const char* transportName(int kind) {
  static const char* const names[kTransportKinds] = {"local", "shm", "tcp", "ofi", "net-plugin", "ib", "other"};
  return kind >= 0 && kind < kTransportKinds ? names[kind] : "other";
}

Status describeLinkKinds(hclComm_t comm, int rank, int nranks, std::vector<int>& kinds) {
  size_t needed = 0;
  PERF_HCL(hclCommDescribeLinks(comm, nullptr, 0, &needed));
  std::string text(needed, '\0');
  PERF_HCL(hclCommDescribeLinks(comm, text.data(), text.size(), &needed));
  kinds.assign(static_cast<size_t>(nranks), kTransportKinds - 1);
  kinds[static_cast<size_t>(rank)] = -1;
  // Lines read "rank R -> rank P: <transport description> (<reason>)".
  std::istringstream lines(text.c_str());
  std::string line;
  while (std::getline(lines, line)) {
    const size_t arrow = line.find("-> rank ");
    const size_t colon = line.find(": ", arrow);
    if (arrow == std::string::npos || colon == std::string::npos) continue;
    const int peer = std::atoi(line.c_str() + arrow + 8);
    if (peer >= 0 && peer < nranks && peer != rank) kinds[static_cast<size_t>(peer)] = kindOf(line.substr(colon + 2));
  }
  return {};
}

CallInspector::CallInspector() : chunkBytes_(static_cast<size_t>(paramInt("HCL_CHUNK_BYTES"))) {}

CallInspector::~CallInspector() = default;

CallShape CallInspector::shape(hclComm_t comm, const CollectiveTest& coll, int rank, int nranks, size_t count,
                               hclDataType_t type, int op, int root) const {
  CallShape out;
  if (coll.kind == CollKind::SendRecv) {
    out.algorithm = "p2p";
    out.peers = p2pPeers(coll, rank, nranks);
  } else {
    CollArgs args;
    args.kind = coll.kind;
    args.rank = rank;
    args.nranks = nranks;
    args.count = count;
    args.type = type;
    args.loadIsIdentity = accumulatorSize(type) == dataTypeSize(type) && op != kMulSum;
    args.root = coll.rooted ? root : 0;
    args.inPlace = false;
    args.chunkBytes = chunkBytes_;
    hclPlanInfo_t plan{};
    if (hclCommGetPlan(comm, collKindName(coll.kind), count * typeSize(type), &plan) != hclSuccess) return out;
    const Topology topology = parseTopologyText(plan.groups, nranks);
    if (!topology.flat()) args.topology = &topology;
    Schedule schedule;
    for (const AlgorithmEntry& e : algorithmTable()) {
      if (e.kind == coll.kind && plan.algorithm == std::string_view(e.name)) schedule = e.generate(args);
    }
    out.algorithm = plan.algorithm;
    out.modelUs = plan.estimatedUs;
    for (const Step& step : schedule.steps) {
      if (step.kind == Step::Kind::Send || step.kind == Step::Kind::Recv) out.peers.push_back(step.peer);
    }
  }
  std::sort(out.peers.begin(), out.peers.end());
  out.peers.erase(std::unique(out.peers.begin(), out.peers.end()), out.peers.end());
  std::erase(out.peers, rank);
  return out;
}

std::string transportList(const std::vector<double>& used) {
  std::string out;
  for (int k = 0; k < kTransportKinds && k < static_cast<int>(used.size()); ++k) {
    if (used[static_cast<size_t>(k)] == 0) continue;
    if (!out.empty()) out += ',';
    out += transportName(k);
  }
  return out.empty() ? "none" : out;
}

}  // namespace hcl::perf
