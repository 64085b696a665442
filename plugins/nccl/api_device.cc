// The device API's host functions. Creating device communicators and their
// resources needs GPU memory windows, so those return ncclInvalidUsage. The
// team queries are plain arithmetic on the communicator and are answered:
// no two HCL ranks share load/store-accessible memory, so the LSA team of a
// rank is the rank alone and the rail team is the whole communicator.
#include <fmt/format.h>

#include "plugins/nccl/abi.h"
#include "plugins/nccl/device_api.h"

using namespace hcl::nccl;

namespace {

constexpr const char* kDeviceApi = "the NCCL device API is";

struct World {
  int nranks = 0;
  int rank = -1;
};

bool worldOf(const char* call, ncclComm_t comm, World& w) {
  if (hclCommCount(toHcl(comm), &w.nranks) == hclSuccess && hclCommUserRank(toHcl(comm), &w.rank) == hclSuccess) {
    return true;
  }
  report(hcl::invalidArgument(fmt::format("{}: comm {} is not a valid communicator", call, static_cast<void*>(comm))),
         comm);
  return false;
}

constexpr ncclTeam_t kNoTeam{0, -1, 0};

}  // namespace

extern "C" {

ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t*, ncclDevComm_t*) {
  return notSupported("ncclDevCommCreate", kDeviceApi, comm);
}
HCL_NCCL_ALIAS(ncclDevCommCreate)

ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t*) {
  return notSupported("ncclDevCommDestroy", kDeviceApi, comm);
}
HCL_NCCL_ALIAS(ncclDevCommDestroy)

ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t, int, ncclLsaBarrierHandle_t*,
                                              ncclDevResourceRequirements_t*) {
  return notSupported("ncclLsaBarrierCreateRequirement", kDeviceApi);
}
HCL_NCCL_ALIAS(ncclLsaBarrierCreateRequirement)

ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t, int, ncclGinBarrierHandle_t*,
                                              ncclDevResourceRequirements_t*) {
  return notSupported("ncclGinBarrierCreateRequirement", kDeviceApi, comm);
}
HCL_NCCL_ALIAS(ncclGinBarrierCreateRequirement)

ncclResult_t pncclLLA2ACreateRequirement(int, int, ncclLLA2AHandle_t*, ncclDevResourceRequirements_t*) {
  return notSupported("ncclLLA2ACreateRequirement", kDeviceApi);
}
HCL_NCCL_ALIAS(ncclLLA2ACreateRequirement)

// Pure arithmetic, as NCCL's (one 8-byte slot per started 8 bytes of each
// element), although the resource it sizes is one HCL cannot create.
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) { return maxElts * ((maxEltSize + 7) / 8); }
HCL_NCCL_ALIAS(ncclLLA2ACalcSlots)

ncclTeam_t pncclTeamWorld(ncclComm_t comm) {
  World w;
  if (!worldOf("ncclTeamWorld", comm, w)) return kNoTeam;
  return {w.nranks, w.rank, 1};
}
HCL_NCCL_ALIAS(ncclTeamWorld)

ncclTeam_t pncclTeamLsa(ncclComm_t comm) {
  World w;
  if (!worldOf("ncclTeamLsa", comm, w)) return kNoTeam;
  return {1, 0, 1};
}
HCL_NCCL_ALIAS(ncclTeamLsa)

ncclTeam_t pncclTeamRail(ncclComm_t comm) {
  World w;
  if (!worldOf("ncclTeamRail", comm, w)) return kNoTeam;
  return {w.nranks, w.rank, 1};  // the world divided into LSA teams of one
}
HCL_NCCL_ALIAS(ncclTeamRail)

int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  World w;
  if (!worldOf("ncclTeamRankToWorld", comm, w)) return -1;
  return w.rank + (rank - team.rank) * team.stride;
}
HCL_NCCL_ALIAS(ncclTeamRankToWorld)

int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  World w;
  if (!worldOf("ncclTeamRankToLsa", comm, w)) return -1;
  constexpr int kLsaRank = 0;
  return kLsaRank + (rank - team.rank) * team.stride;
}
HCL_NCCL_ALIAS(ncclTeamRankToLsa)

}  // extern "C"
