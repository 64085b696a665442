/* The public struct layout facts both nccl.h headers must agree on, as one
 * list of numbers (X-macros, shared by the C and C++ translation units). */
#ifndef HCL_TEST_NCCL_LAYOUT_H_
#define HCL_TEST_NCCL_LAYOUT_H_

#include <stddef.h>

#define NCCL_CONFIG_FIELDS(X)                                                                   \
  X(size) X(magic) X(version) X(blocking) X(cgaClusterSize) X(minCTAs) X(maxCTAs) X(netName) \
  X(splitShare) X(trafficClass) X(commName) X(collnetEnable) X(CTAPolicy) X(shrinkShare)       \
  X(nvlsCTAs) X(nChannelsPerNetPeer) X(nvlinkCentricSched)

#define NCCL_SIM_INFO_FIELDS(X) X(size) X(magic) X(version) X(estimatedTime)

#define NCCL_LAYOUT_FIELD_OF(type, field) offsetof(type, field), sizeof(((type*)0)->field)
#define NCCL_LAYOUT_CONFIG_FIELD(field) NCCL_LAYOUT_FIELD_OF(ncclConfig_t, field),
#define NCCL_LAYOUT_SIM_FIELD(field) NCCL_LAYOUT_FIELD_OF(ncclSimInfo_t, field),

/* The initializer of a size_t array holding every fact, in a fixed order. */
#define NCCL_LAYOUT_VALUES                                                                      \
  {                                                                                             \
    sizeof(ncclUniqueId), offsetof(ncclUniqueId, internal), sizeof(ncclConfig_t),               \
        sizeof(ncclSimInfo_t), sizeof(ncclResult_t), sizeof(ncclDataType_t), sizeof(ncclRedOp_t), \
        sizeof(ncclScalarResidence_t), sizeof(ncclComm_t), sizeof(ncclWindow_t),               \
        sizeof(cudaStream_t), NCCL_CONFIG_FIELDS(NCCL_LAYOUT_CONFIG_FIELD)                      \
            NCCL_SIM_INFO_FIELDS(NCCL_LAYOUT_SIM_FIELD) 0                                       \
  }

#define NCCL_LAYOUT_CONFIG_NAME(field) "offsetof(ncclConfig_t, " #field ")", "sizeof(ncclConfig_t::" #field ")",
#define NCCL_LAYOUT_SIM_NAME(field) "offsetof(ncclSimInfo_t, " #field ")", "sizeof(ncclSimInfo_t::" #field ")",
#define NCCL_LAYOUT_NAMES                                                                         \
  {                                                                                               \
    "sizeof(ncclUniqueId)", "offsetof(ncclUniqueId, internal)", "sizeof(ncclConfig_t)",           \
        "sizeof(ncclSimInfo_t)", "sizeof(ncclResult_t)", "sizeof(ncclDataType_t)",                \
        "sizeof(ncclRedOp_t)", "sizeof(ncclScalarResidence_t)", "sizeof(ncclComm_t)",             \
        "sizeof(ncclWindow_t)", "sizeof(cudaStream_t)", NCCL_CONFIG_FIELDS(NCCL_LAYOUT_CONFIG_NAME) \
            NCCL_SIM_INFO_FIELDS(NCCL_LAYOUT_SIM_NAME) "end marker"                               \
  }

#endif
