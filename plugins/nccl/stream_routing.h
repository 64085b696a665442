// Which HCL stream a cudaStream_t becomes. On a communicator whose device is
// a GPU, each (communicator, cudaStream_t) pair gets one HCL stream gated on
// that CUDA stream (hclCommWrapStream), so calls return at once and stay in
// the stream's order, as with NVIDIA's NCCL. On a CPU communicator every call
// runs with HCL's NULL stream and is complete when it returns.
#pragma once

#include "hcl.h"
#include "nccl.h"

namespace hcl::nccl {

// Where comm computes (a GPU's buffers may be device memory), read without
// recording an error, whatever state the communicator is in. Unknown for a
// handle that is not a communicator (NULL, destroyed, made up) or whose
// init has not finished: the HCL call that follows reports that.
enum class CommPlace { Cpu, Gpu, Unknown };
CommPlace commPlace(ncclComm_t comm);
// The HCL stream for `stream` on `comm`; nullptr for a CPU communicator.
// On failure returns the error, reported against `call` (and the open group).
ncclResult_t streamFor(const char* call, ncclComm_t comm, cudaStream_t stream, hclStream_t* out);
// Ends `comm` with `end` (hclCommDestroy or hclCommAbort), then destroys
// the streams made for it, which waits for their work. They leave the table
// first, so that a communicator made meanwhile at the same address keeps
// its own, and are destroyed outside its lock, after the abort has stopped
// work that would otherwise wait for its timeout. Where `end` fails, the
// streams go back.
hclResult_t endWithStreams(ncclComm_t comm, hclResult_t (*end)(hclComm_t));

}  // namespace hcl::nccl
