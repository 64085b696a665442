// Argument checks shared by the API entry points. Each returns
// hclInvalidArgument/hclInvalidUsage with a message naming the argument and
// its value; the caller prefixes the call name.
#pragma once

#include <cstdint>
#include <memory>

#include "core/datatype.h"
#include "core/handles.h"

namespace hcl {

Status checkComm(hclComm_t comm, std::shared_ptr<Communicator>& out);
// The same, taking no reference: `out` lives as long as the handle.
inline Status checkComm(hclComm_t comm, Communicator*& out);
// checkComm's checks past the handle's liveness, for a caller that holds
// the handle alive (withLiveHandle).
Status checkLiveComm(hclComm_t comm, std::shared_ptr<Communicator>& out);
// As checkComm, but a communicator that has failed, been aborted or been
// revoked passes: for calls that only touch this rank (memory), leave it
// (shrink) or revoke it.
Status checkCommEvenIfFailed(hclComm_t comm, std::shared_ptr<Communicator>& out);
// These two take the raw int a C caller passed, which may lie outside the enum's range.
inline Status checkDataType(int type);
inline Status checkOp(Communicator& comm, int op);
inline Status checkBuffer(const char* name, const void* buffer, size_t count);
// count * multiplier elements of `type` must fit in size_t bytes.
inline Status checkCount(const char* name, size_t count, size_t multiplier, hclDataType_t type);
inline Status checkRank(const char* name, int value, int nranks);
inline Status checkStream(hclStream_t stream);

// The checks every call makes are inline tests; only a failing one leaves
// the caller, to build its message here.
namespace refusal {
[[gnu::cold]] Status comm(hclComm_t comm, Communicator*& out);  // every check again, for its message
[[gnu::cold]] Status dataType(int type);
[[gnu::cold]] Status op(Communicator& comm, int op);  // passes one from hclRedOpCreatePreMulSum
[[gnu::cold]] Status buffer(const char* name, size_t count);
[[gnu::cold]] Status count(const char* name, size_t count, size_t multiplier, hclDataType_t type);
[[gnu::cold]] Status rank(const char* name, int value, int nranks);
[[gnu::cold]] Status stream(hclStream_t stream);
[[gnu::cold]] Status finalized();  // for a call that hclCommFinalize rules out
}  // namespace refusal

inline Status checkComm(hclComm_t comm, Communicator*& out) {
  if (comm && isLiveHandle(comm) && !comm->initPending.load(std::memory_order_acquire)) {
    Communicator* impl = comm->impl.get();
    if (impl && impl->usable()) {
      out = impl;
      return {};
    }
  }
  return refusal::comm(comm, out);
}

inline Status checkDataType(int type) { return isValidDataType(type) ? Status{} : refusal::dataType(type); }

inline Status checkOp(Communicator& comm, int op) { return op >= 0 && op < hclNumOps ? Status{} : refusal::op(comm, op); }

inline Status checkBuffer(const char* name, const void* buffer, size_t count) {
  return buffer || count == 0 ? Status{} : refusal::buffer(name, count);
}

inline Status checkCount(const char* name, size_t count, size_t multiplier, hclDataType_t type) {
  // Half of size_t at most, which leaves room for offsets.
  size_t elements = 0, bytes = 0;
  if (__builtin_mul_overflow(count, multiplier, &elements) ||
      __builtin_mul_overflow(elements, dataTypeSize(type), &bytes) || bytes > SIZE_MAX / 2) {
    return refusal::count(name, count, multiplier, type);
  }
  return {};
}

inline Status checkRank(const char* name, int value, int nranks) {
  return value >= 0 && value < nranks ? Status{} : refusal::rank(name, value, nranks);
}

inline Status checkStream(hclStream_t stream) {
  return !stream || isLiveHandle(stream) ? Status{} : refusal::stream(stream);
}

// hclCommInitAll starts one thread per rank: far fewer than a communicator
// may have.
inline constexpr int kMaxInitAllRanks = 4096;

}  // namespace hcl
