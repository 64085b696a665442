// The host functions of NCCL 2.28's experimental device API
// (nccl_device/*.h), which NVIDIA's libnccl.so.2 exports. HCL exports them
// with the same C signatures so programs that reference them still load;
// the types HCL never looks into are opaque here.
#pragma once

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;

/* A team is returned by value, so its layout is part of the ABI. */
typedef struct ncclTeam {
  int nRanks;
  int rank;
  int stride;
} ncclTeam_t;

#define HCL_NCCL_DEVICE_API(ret, name, args) \
  ret name args;                             \
  ret p##name args;

HCL_NCCL_DEVICE_API(ncclResult_t, ncclDevCommCreate,
                    (ncclComm_t comm, const ncclDevCommRequirements_t* reqs, ncclDevComm_t* outDevComm))
HCL_NCCL_DEVICE_API(ncclResult_t, ncclDevCommDestroy, (ncclComm_t comm, const ncclDevComm_t* devComm))
HCL_NCCL_DEVICE_API(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm))
HCL_NCCL_DEVICE_API(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm))
HCL_NCCL_DEVICE_API(ncclTeam_t, ncclTeamRail, (ncclComm_t comm))
HCL_NCCL_DEVICE_API(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank))
HCL_NCCL_DEVICE_API(int, ncclTeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank))
HCL_NCCL_DEVICE_API(ncclResult_t, ncclLsaBarrierCreateRequirement,
                    (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                     ncclDevResourceRequirements_t* outReq))
HCL_NCCL_DEVICE_API(ncclResult_t, ncclGinBarrierCreateRequirement,
                    (ncclComm_t comm, ncclTeam_t team, int nBarriers, ncclGinBarrierHandle_t* outHandle,
                     ncclDevResourceRequirements_t* outReq))
HCL_NCCL_DEVICE_API(int, ncclLLA2ACalcSlots, (int maxElts, int maxEltSize))
HCL_NCCL_DEVICE_API(ncclResult_t, ncclLLA2ACreateRequirement,
                    (int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq))

#undef HCL_NCCL_DEVICE_API

#ifdef __cplusplus
} /* extern "C" */
#endif
