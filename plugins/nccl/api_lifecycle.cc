// NCCL entry points: version, unique ids, communicator creation and teardown.
#include <algorithm>
#include <vector>

#include "core/group.h"
#include "core/log.h"
#include "core/validate.h"
#include "plugins/nccl/abi.h"
#include "plugins/nccl/stream_routing.h"
#include "plugins/nccl/config_compat.h"

using namespace hcl::nccl;

namespace {

// An ncclComm_t output that receives the hcl handle only if HCL wrote one.
class CommOut {
 public:
  explicit CommOut(ncclComm_t* out) : out_(out) {}
  hclComm_t* get() { return out_ ? &value_ : nullptr; }
  // An init refused before HCL saw it: NULL, as HCL writes for its own refusals.
  void refuse() { value_ = nullptr; }
  void writeBack() {
    if (out_ && value_ != untouchedMarker<hclComm>()) *out_ = toNccl(value_);
  }

 private:
  ncclComm_t* out_;
  hclComm_t value_ = untouchedMarker<hclComm>();
};

// Calls fn(hclConfig_t*) with the caller's config translated; NULL stays NULL.
// `refused`: the init's output, set to NULL when the config is refused.
template <typename Fn>
ncclResult_t withConfig(const char* call, ncclConfig_t* config, ncclComm_t comm, Fn&& fn,
                        CommOut* refused = nullptr) {
  if (!config) return toNccl(fn(nullptr));
  ConfigTranslation t;
  const hcl::Status s = translateConfig(config, t);
  if (!s.ok()) {
    if (refused) refused->refuse();
    return report(hcl::failGroup(s.withContext(call)), comm);
  }
  if (t.ignoredBytes > 0) {
    hcl::log::info(hcl::log::Init, "{}: ignoring {} bytes of config fields newer than NCCL 2.28 (config version {})",
                   call, t.ignoredBytes, config->version);
  }
  return toNccl(fn(&t.config));
}

}  // namespace

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  if (!version) return report(hcl::invalidArgument("ncclGetVersion: version is NULL"));
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
HCL_NCCL_ALIAS(ncclGetVersion)

ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  hclUniqueId id;
  const hclResult_t r = hclGetUniqueId(uniqueId ? &id : nullptr);
  if (r == hclSuccess) std::memcpy(uniqueId->internal, id.internal, sizeof id.internal);
  return toNccl(r);
}
HCL_NCCL_ALIAS(ncclGetUniqueId)

ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  CommOut out(comm);
  const ncclResult_t r = withConfig(
      "ncclCommInitRankConfig", config, nullptr,
      [&](hclConfig_t* c) { return hclCommInitRankConfig(out.get(), nranks, toHcl(commId), rank, c); }, &out);
  out.writeBack();
  return r;
}
HCL_NCCL_ALIAS(ncclCommInitRankConfig)

ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  CommOut out(comm);
  const hclResult_t r = hclCommInitRank(out.get(), nranks, toHcl(commId), rank);
  out.writeBack();
  return toNccl(r);
}
HCL_NCCL_ALIAS(ncclCommInitRank)

ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  if (ndev < 1 || ndev > hcl::kMaxInitAllRanks) {  // refused, or nothing to create: no handle is written
    hclComm_t unused = nullptr;
    return toNccl(hclCommInitAll(comm ? &unused : nullptr, ndev, devlist));
  }
  std::vector<hclComm_t> handles(static_cast<size_t>(ndev), untouchedMarker<hclComm>());
  const hclResult_t r = hclCommInitAll(comm ? handles.data() : nullptr, ndev, devlist);
  for (int i = 0; comm && i < ndev; ++i) {
    if (handles[static_cast<size_t>(i)] != untouchedMarker<hclComm>()) comm[i] = toNccl(handles[static_cast<size_t>(i)]);
  }
  return toNccl(r);
}
HCL_NCCL_ALIAS(ncclCommInitAll)

ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config) {
  // HCL reads all nId ids (it stops the roots it does not join), so all are
  // converted; a bad nId is refused by HCL before it reads any.
  const bool idsReadable = commIds && nId > 0 && nId <= std::max(nranks, 1);
  std::vector<hclUniqueId> ids(idsReadable ? static_cast<size_t>(nId) : 1);
  for (size_t i = 0; idsReadable && i < ids.size(); ++i) ids[i] = toHcl(commIds[i]);
  CommOut out(newcomm);
  const ncclResult_t r = withConfig(
      "ncclCommInitRankScalable", config, nullptr,
      [&](hclConfig_t* c) {
        return hclCommInitRankScalable(out.get(), nranks, myrank, nId, commIds ? ids.data() : nullptr, c);
      },
      &out);
  out.writeBack();
  return r;
}
HCL_NCCL_ALIAS(ncclCommInitRankScalable)

ncclResult_t pncclCommFinalize(ncclComm_t comm) { return toNccl(hclCommFinalize(toHcl(comm))); }
HCL_NCCL_ALIAS(ncclCommFinalize)

ncclResult_t pncclCommDestroy(ncclComm_t comm) { return toNccl(endWithStreams(comm, hclCommDestroy)); }
HCL_NCCL_ALIAS(ncclCommDestroy)

ncclResult_t pncclCommAbort(ncclComm_t comm) { return toNccl(endWithStreams(comm, hclCommAbort)); }
HCL_NCCL_ALIAS(ncclCommAbort)

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return toNccl(hclCommRevoke(toHcl(comm), revokeFlags));
}
HCL_NCCL_ALIAS(ncclCommRevoke)

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  CommOut out(newcomm);
  const ncclResult_t r = withConfig(
      "ncclCommSplit", config, comm,
      [&](hclConfig_t* c) { return hclCommSplit(toHcl(comm), color, key, out.get(), c); }, &out);
  out.writeBack();
  return r;
}
HCL_NCCL_ALIAS(ncclCommSplit)

ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags) {
  CommOut out(newcomm);
  const ncclResult_t r = withConfig(
      "ncclCommShrink", config, comm,
      [&](hclConfig_t* c) {
        return hclCommShrink(toHcl(comm), excludeRanksList, excludeRanksCount, out.get(), c, shrinkFlags);
      },
      &out);
  out.writeBack();
  return r;
}
HCL_NCCL_ALIAS(ncclCommShrink)

}  // extern "C"
