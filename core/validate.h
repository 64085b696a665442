// Argument checks shared by the API entry points. Each returns
// hclInvalidArgument/hclInvalidUsage with a message naming the argument and
// its value; the caller prefixes the call name.
#pragma once

#include <memory>

#include "core/handles.h"

namespace hcl {

Status checkComm(hclComm_t comm, std::shared_ptr<Communicator>& out);
// The same, taking no reference: `out` lives as long as the handle.
Status checkComm(hclComm_t comm, Communicator*& out);
// checkComm's checks past the handle's liveness, for a caller that holds
// the handle alive (withLiveHandle).
Status checkLiveComm(hclComm_t comm, std::shared_ptr<Communicator>& out);
// As checkComm, but a communicator that has failed, been aborted or been
// revoked passes: for calls that only touch this rank (memory), leave it
// (shrink) or revoke it.
Status checkCommEvenIfFailed(hclComm_t comm, std::shared_ptr<Communicator>& out);
// These two take the raw int a C caller passed, which may lie outside the enum's range.
Status checkDataType(int type);
Status checkOp(Communicator& comm, int op);
Status checkBuffer(const char* name, const void* buffer, size_t count);
// count * multiplier elements of `type` must fit in size_t bytes.
Status checkCount(const char* name, size_t count, size_t multiplier, hclDataType_t type);
Status checkRank(const char* name, int value, int nranks);
Status checkStream(hclStream_t stream);

// hclCommInitAll starts one thread per rank: far fewer than a communicator
// may have.
inline constexpr int kMaxInitAllRanks = 4096;

}  // namespace hcl
