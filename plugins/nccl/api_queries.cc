// NCCL entry points: errors, queries, memory, registration, reduction operators.
#include <string>

#include "plugins/nccl/abi.h"
#include "plugins/nccl/error_text.h"
#include "plugins/nccl/memory_routing.h"

using namespace hcl::nccl;

namespace {
// ncclGetLastError returns a pointer that stays valid until the thread's next call.
thread_local std::string tlsLastError;
}  // namespace

extern "C" {

// Exported by NVIDIA's library without a declaration in nccl.h.
void ncclResetDebugInitInternal(void);

ncclResult_t pncclMemAlloc(void** ptr, size_t size) { return toNccl(hclMemAlloc(ptr, size)); }
HCL_NCCL_ALIAS(ncclMemAlloc)

ncclResult_t pncclMemFree(void* ptr) { return toNccl(hclMemFree(ptr)); }
HCL_NCCL_ALIAS(ncclMemFree)

const char* pncclGetErrorString(ncclResult_t result) { return resultString(result); }
HCL_NCCL_ALIAS(ncclGetErrorString)

const char* pncclGetLastError(ncclComm_t comm) {
  tlsLastError = ncclWording(hclGetLastError(toHcl(comm)));
  return tlsLastError.c_str();
}
HCL_NCCL_ALIAS(ncclGetLastError)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void pncclResetDebugInit(void) { hclResetDebugInit(); }
HCL_NCCL_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop

void ncclResetDebugInitInternal(void) { hclResetDebugInit(); }

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  hclResult_t value = hclSuccess;
  const hclResult_t r = hclCommGetAsyncError(toHcl(comm), asyncError ? &value : nullptr);
  if (r == hclSuccess) *asyncError = toNccl(value);
  return toNccl(r);
}
HCL_NCCL_ALIAS(ncclCommGetAsyncError)

ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) { return toNccl(hclCommCount(toHcl(comm), count)); }
HCL_NCCL_ALIAS(ncclCommCount)

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  return toNccl(hclCommCuDevice(toHcl(comm), device));
}
HCL_NCCL_ALIAS(ncclCommCuDevice)

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  return toNccl(hclCommUserRank(toHcl(comm), rank));
}
HCL_NCCL_ALIAS(ncclCommUserRank)

ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (ncclResult_t r = checkHostBuffers("ncclCommRegister", comm, {{"buff", buff}}, InGroup::Alone)) return r;
  return toNccl(hclCommRegister(toHcl(comm), buff, size, handle));
}
HCL_NCCL_ALIAS(ncclCommRegister)

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  return toNccl(hclCommDeregister(toHcl(comm), handle));
}
HCL_NCCL_ALIAS(ncclCommDeregister)

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  if (ncclResult_t r = checkHostBuffers("ncclCommWindowRegister", comm, {{"buff", buff}})) return r;
  // The caller's own pointer: inside a group HCL fills it at ncclGroupEnd.
  static_assert(sizeof(ncclWindow_t) == sizeof(hclWindow_t));
  return toNccl(hclCommWindowRegister(toHcl(comm), buff, size, reinterpret_cast<hclWindow_t*>(win), winFlags));
}
HCL_NCCL_ALIAS(ncclCommWindowRegister)

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return toNccl(hclCommWindowDeregister(toHcl(comm), reinterpret_cast<hclWindow_t>(win)));
}
HCL_NCCL_ALIAS(ncclCommWindowDeregister)

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  if (ncclResult_t r = checkHostBuffers("ncclRedOpCreatePreMulSum", comm, {{"scalar", scalar}}, InGroup::Alone)) return r;
  hclRedOp_t created = hclSum;
  const hclResult_t r =
      hclRedOpCreatePreMulSum(op ? &created : nullptr, scalar, toHcl(datatype), toHcl(residence), toHcl(comm));
  if (r == hclSuccess) *op = toNccl(created);
  return toNccl(r);
}
HCL_NCCL_ALIAS(ncclRedOpCreatePreMulSum)

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return toNccl(hclRedOpDestroy(toHcl(op), toHcl(comm)));
}
HCL_NCCL_ALIAS(ncclRedOpDestroy)

}  // extern "C"
