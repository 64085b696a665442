// Which HCL stream a cudaStream_t becomes. On a communicator whose device is
// a GPU, each (communicator, cudaStream_t) pair gets one HCL stream gated on
// that CUDA stream (hclCommWrapStream), so calls return at once and stay in
// the stream's order, as with NVIDIA's NCCL. On a CPU communicator every call
// runs with HCL's NULL stream and is complete when it returns.
#pragma once

#include "hcl.h"
#include "nccl.h"

namespace hcl::nccl {

// True when comm computes on a GPU (its buffers may be device memory).
bool commOnGpu(ncclComm_t comm);
// The HCL stream for `stream` on `comm`; nullptr for a CPU communicator.
// On failure returns false and reports the error against `call`.
bool streamFor(const char* call, ncclComm_t comm, cudaStream_t stream, hclStream_t* out);
// Destroys the streams made for `comm` (before it is destroyed).
void forgetStreams(ncclComm_t comm);

}  // namespace hcl::nccl
