// Which device a buffer passed through the NCCL API belongs to.
//
// Host memory runs on HCL's CPU device. CUDA device memory needs a CUDA
// device backend, which this build does not have, so such a call fails with
// ncclInvalidArgument instead of letting the CPU touch GPU addresses.
#pragma once

#include <functional>
#include <initializer_list>

#include "core/status.h"
#include "nccl.h"

namespace hcl::nccl {

enum class MemoryKind { Host, CudaDevice };

// Classifies one non-null pointer.
using MemoryClassifier = std::function<MemoryKind(const void*)>;

// Asks the CUDA runtime (cudaPointerGetAttributes), loaded with dlopen on
// first use. Without a runtime, a driver or a device, every pointer is host
// memory. Managed and pinned host memory count as host memory: the CPU can
// address them.
const MemoryClassifier& cudaMemoryClassifier();

struct NamedBuffer {
  const char* name;  // e.g. "sendbuff"
  const void* ptr;   // may be NULL (not checked)
};

// OK when every buffer is host memory; otherwise ncclInvalidArgument naming
// the buffer ("sendbuff 0x... is CUDA device memory: device memory needs the
// CUDA device, which this build lacks"). The caller prefixes its name.
Status requireHostMemory(std::initializer_list<NamedBuffer> buffers, const MemoryClassifier& classify);

// Whether a refused call fails the caller's open group: calls that join a
// group do; registration and reduction-op creation fail alone, as NCCL's.
enum class InGroup { Joins, Alone };

// requireHostMemory with the CUDA classifier, reported as an error of `call`
// (and `comm`). Returns ncclSuccess when every buffer is host memory.
ncclResult_t checkHostBuffers(const char* call, ncclComm_t comm, std::initializer_list<NamedBuffer> buffers,
                              InGroup inGroup = InGroup::Joins);

}  // namespace hcl::nccl
