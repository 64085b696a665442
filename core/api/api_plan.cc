// hclCommGetPlan: the cost model's choice, as every rank of a communicator runs it.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "collectives/plan/topology_text.h"
#include "core/errors.h"
#include "core/validate.h"

using namespace hcl;

namespace {

constexpr CollKind kNamedKinds[] = {CollKind::AllReduce, CollKind::Broadcast,     CollKind::Reduce,
                                    CollKind::AllGather, CollKind::ReduceScatter, CollKind::AlltoAll,
                                    CollKind::Gather,    CollKind::Scatter};

bool kindFromName(const char* name, CollKind& out) {
  std::string lowered(name);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  for (CollKind k : kNamedKinds) {
    if (lowered == collKindName(k)) {
      out = k;
      return true;
    }
  }
  return false;
}

template <size_t N>
void copyText(char (&dst)[N], const std::string& text) {
  const size_t n = std::min(N - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" hclResult_t hclCommGetPlan(hclComm_t comm, const char* collective, size_t bytes, hclPlanInfo_t* info) {
  // The plan is this rank's own record: a failed communicator still has it.
  std::shared_ptr<Communicator> impl;
  Status s = checkCommEvenIfFailed(comm, impl);
  if (s.ok() && !collective) s = invalidArgument("collective is NULL");
  else if (s.ok() && !info) s = invalidArgument("info is NULL");
  CollKind kind = CollKind::AllReduce;
  if (s.ok() && !kindFromName(collective, kind))
    s = invalidArgument(fmt::format("collective '{}' is not one of allreduce, broadcast, reduce, allgather, "
                                    "reducescatter, alltoall, gather, scatter",
                                    collective));
  if (!s.ok()) return report(s.withContext("hclCommGetPlan"));

  *info = hclPlanInfo_t{};
  if (impl->ipc() && bytes > 0) {
    // Device buffers of ranks on one host: the devices read and write each
    // other's memory; the host algorithms are not used.
    const std::string cls = "ipc:" + impl->device().vendor();
    copyText(info->algorithm, "ipc");
    copyText(info->linkClasses, cls);
    copyText(info->candidates, "ipc");
    return hclSuccess;
  }
  const Planner& planner = impl->planner();
  copyText(info->algorithm, planner.algorithmFor(kind, bytes));
  if (const PlanTable* table = planner.table()) {
    if (const PlanChoice* c = table->find(kind, bytes)) {
      std::string classes;
      for (const auto& cls : c->linkClasses) classes += (classes.empty() ? "" : ",") + cls;
      info->estimatedUs = c->algorithm == info->algorithm ? c->estimatedUs : 0;
      copyText(info->linkClasses, classes);
      copyText(info->candidates, c->candidates);
    }
    copyText(info->groups, topologyText(table->topology, sizeof info->groups));
  }
  return hclSuccess;
}
