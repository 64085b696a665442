#include "core/validate.h"

#include <fmt/format.h>

#include "core/datatype.h"

namespace hcl {

namespace {

Status checkHandle(hclComm_t comm) {
  if (!comm) return invalidArgument("comm is NULL");
  if (!isLiveHandle(comm)) {
    return invalidArgument(fmt::format("comm {} is not a valid communicator (destroyed or never created)",
                                       static_cast<const void*>(comm)));
  }
  return {};
}

Status checkUsable(hclComm_t comm) {
  // Read first: a deferred init writes impl and initStatus before clearing it.
  // As NCCL: a communicator not yet ready is an invalid argument.
  if (comm->initPending.load(std::memory_order_acquire)) {
    return invalidArgument(comm->initRunning.load(std::memory_order_acquire)
                               ? "comm is still initializing (wait until hclCommGetAsyncError no longer gives "
                                 "hclInProgress)"
                               : "comm is still initializing (complete the group with hclGroupEnd first)");
  }
  if (!comm->impl) {
    return {comm->initStatus.ok() ? hclInternalError : comm->initStatus.code(),
            "comm failed to initialize: " + comm->initStatus.message()};
  }
  if (comm->impl->revoked()) {
    return invalidUsage("comm was revoked (hclCommRevoke): destroy it, or split or shrink it into a new communicator");
  }
  if (comm->impl->finalized()) return refusal::finalized();
  HCL_TRY(comm->impl->failure());
  if (comm->impl->abortFlag().load()) return invalidUsage("comm was aborted");
  return {};
}

}  // namespace

Status checkComm(hclComm_t comm, std::shared_ptr<Communicator>& out) {
  HCL_TRY(checkHandle(comm));
  return checkLiveComm(comm, out);
}

Status refusal::comm(hclComm_t comm, Communicator*& out) {
  HCL_TRY(checkHandle(comm));
  HCL_TRY(checkUsable(comm));
  out = comm->impl.get();  // all passed this time: the state changed meanwhile
  return {};
}

Status checkLiveComm(hclComm_t comm, std::shared_ptr<Communicator>& out) {
  HCL_TRY(checkUsable(comm));
  out = comm->impl;
  return {};
}

Status checkCommEvenIfFailed(hclComm_t comm, std::shared_ptr<Communicator>& out) {
  const Status s = checkComm(comm, out);
  if (s.ok() || !isLiveHandle(comm) || comm->initPending.load(std::memory_order_acquire) || !comm->impl) return s;
  out = comm->impl;  // refused only for its failure or abort
  return {};
}

Status refusal::finalized() {
  return invalidUsage("comm was finalized (hclCommFinalize): only queries, deregistration and hclCommDestroy may "
                      "follow");
}

Status refusal::dataType(int type) {
  return invalidArgument(fmt::format("datatype {} is not a valid hclDataType_t (0..{})", type, hclNumTypes - 1));
}

Status refusal::op(Communicator& comm, int op) {
  if (!comm.redOps().isValid(op)) {
    return invalidArgument(fmt::format(
        "op {} is not a valid reduction operator (built-in 0..4 or one from hclRedOpCreatePreMulSum)",
        op));
  }
  return {};
}

Status refusal::buffer(const char* name, size_t count) {
  return invalidArgument(fmt::format("{} is NULL with count {}", name, count));
}

Status refusal::count(const char* name, size_t count, size_t multiplier, hclDataType_t type) {
  return invalidArgument(fmt::format("{} {} overflows: {} x {} elements of {} bytes do not fit in memory", name,
                                     count, count, multiplier, dataTypeSize(type)));
}

Status refusal::rank(const char* name, int value, int nranks) {
  return invalidArgument(fmt::format("{} {} is out of range for a communicator of {} ranks", name, value, nranks));
}

Status refusal::stream(hclStream_t stream) {
  return invalidArgument(fmt::format("stream {} is not a stream from hclStreamCreate (or was destroyed)",
                                     static_cast<const void*>(stream)));
}

}  // namespace hcl
