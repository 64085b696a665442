// The NCCL ABI layer's glue: conversions between nccl* and hcl* types (which
// are laid out and numbered identically, checked below), the export macro for
// the pnccl* profiling twins, and reporting errors with the calling function's
// NCCL name.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "core/status.h"
#include "hcl.h"
#include "nccl.h"

namespace hcl::nccl {

// Every public nccl* function is defined as pnccl* and exported under both
// names; nccl* is a weak alias, as in NVIDIA's library, so a profiler can
// interpose nccl* and forward to pnccl*.
#define HCL_NCCL_ALIAS(name) \
  extern "C" __attribute__((weak, alias("p" #name))) decltype(p##name) name;

static_assert(sizeof(ncclUniqueId) == sizeof(hclUniqueId));
static_assert(sizeof(ncclConfig_t) == sizeof(hclConfig_t));
#define HCL_NCCL_SAME_FIELD(type_a, type_b, field)                          \
  static_assert(offsetof(type_a, field) == offsetof(type_b, field) &&       \
                sizeof(type_a::field) == sizeof(type_b::field))
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, size);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, magic);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, version);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, blocking);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, cgaClusterSize);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, minCTAs);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, maxCTAs);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, netName);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, splitShare);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, trafficClass);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, commName);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, collnetEnable);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, CTAPolicy);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, shrinkShare);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, nvlsCTAs);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, nChannelsPerNetPeer);
HCL_NCCL_SAME_FIELD(ncclConfig_t, hclConfig_t, nvlinkCentricSched);
static_assert(sizeof(ncclSimInfo_t) == sizeof(hclSimInfo_t));
HCL_NCCL_SAME_FIELD(ncclSimInfo_t, hclSimInfo_t, estimatedTime);
#undef HCL_NCCL_SAME_FIELD

#define HCL_NCCL_SAME_VALUE(name) static_assert(static_cast<long long>(nccl##name) == static_cast<long long>(hcl##name))
static_assert(sizeof(ncclResult_t) == sizeof(hclResult_t));
HCL_NCCL_SAME_VALUE(Success);
HCL_NCCL_SAME_VALUE(UnhandledCudaError);
HCL_NCCL_SAME_VALUE(SystemError);
HCL_NCCL_SAME_VALUE(InternalError);
HCL_NCCL_SAME_VALUE(InvalidArgument);
HCL_NCCL_SAME_VALUE(InvalidUsage);
HCL_NCCL_SAME_VALUE(RemoteError);
HCL_NCCL_SAME_VALUE(InProgress);
HCL_NCCL_SAME_VALUE(NumResults);
static_assert(sizeof(ncclDataType_t) == sizeof(hclDataType_t));
HCL_NCCL_SAME_VALUE(Int8);
HCL_NCCL_SAME_VALUE(Char);
HCL_NCCL_SAME_VALUE(Uint8);
HCL_NCCL_SAME_VALUE(Int32);
HCL_NCCL_SAME_VALUE(Int);
HCL_NCCL_SAME_VALUE(Uint32);
HCL_NCCL_SAME_VALUE(Int64);
HCL_NCCL_SAME_VALUE(Uint64);
HCL_NCCL_SAME_VALUE(Float16);
HCL_NCCL_SAME_VALUE(Half);
HCL_NCCL_SAME_VALUE(Float32);
HCL_NCCL_SAME_VALUE(Float);
HCL_NCCL_SAME_VALUE(Float64);
HCL_NCCL_SAME_VALUE(Double);
HCL_NCCL_SAME_VALUE(Bfloat16);
HCL_NCCL_SAME_VALUE(Float8e4m3);
HCL_NCCL_SAME_VALUE(Float8e5m2);
HCL_NCCL_SAME_VALUE(NumTypes);
static_assert(sizeof(ncclRedOp_t) == sizeof(hclRedOp_t));
HCL_NCCL_SAME_VALUE(Sum);
HCL_NCCL_SAME_VALUE(Prod);
HCL_NCCL_SAME_VALUE(Max);
HCL_NCCL_SAME_VALUE(Min);
HCL_NCCL_SAME_VALUE(Avg);
HCL_NCCL_SAME_VALUE(NumOps);
HCL_NCCL_SAME_VALUE(MaxRedOp);
HCL_NCCL_SAME_VALUE(ScalarDevice);
HCL_NCCL_SAME_VALUE(ScalarHostImmediate);
#undef HCL_NCCL_SAME_VALUE
static_assert(NCCL_VERSION_CODE == HCL_NCCL_VERSION_CODE);

inline hclComm_t toHcl(ncclComm_t comm) { return reinterpret_cast<hclComm_t>(comm); }
inline ncclComm_t toNccl(hclComm_t comm) { return reinterpret_cast<ncclComm_t>(comm); }
inline hclDataType_t toHcl(ncclDataType_t type) { return static_cast<hclDataType_t>(type); }
inline hclRedOp_t toHcl(ncclRedOp_t op) { return static_cast<hclRedOp_t>(op); }
inline ncclRedOp_t toNccl(hclRedOp_t op) { return static_cast<ncclRedOp_t>(op); }
inline hclScalarResidence_t toHcl(ncclScalarResidence_t r) {
  return static_cast<hclScalarResidence_t>(r);
}
inline ncclResult_t toNccl(hclResult_t r) { return static_cast<ncclResult_t>(r); }
inline hclUniqueId toHcl(const ncclUniqueId& id) {
  hclUniqueId out;
  std::memcpy(out.internal, id.internal, sizeof out.internal);
  return out;
}

// Records `s` (its message already starting with the NCCL call name) as the
// last error of the thread and of `comm`, logs it, returns its code.
ncclResult_t report(const Status& s, ncclComm_t comm = nullptr);

// ncclInvalidUsage for a function HCL exports but does not implement yet.
ncclResult_t notSupported(const char* call, const std::string& what, ncclComm_t comm = nullptr);

// An output handle the hcl call may or may not write. Starting from a value
// no hcl call produces tells "left alone" from "set to NULL", so the caller's
// variable is changed exactly when HCL changed it.
template <typename T>
T* untouchedMarker() {
  alignas(16) static char marker;
  return reinterpret_cast<T*>(&marker);
}

}  // namespace hcl::nccl
