// The process's hclMemAlloc allocations: shared mappings of memfds, which
// peers on the host can map too (transports/shm), so collectives on them read
// and write peers' data without a copy through the kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace hcl {

struct SharedAllocation {
  uint64_t base = 0;
  uint64_t bytes = 0;
  uint64_t serial = 0;  // unique per allocation in this process, never 0
  int fd = -1;          // the memfd, in this process
};

// Records a new allocation and returns its serial number.
uint64_t addSharedAllocation(void* base, size_t bytes, int fd);
// Forgets the allocation that starts at `base`; empty if there is none.
std::optional<SharedAllocation> removeSharedAllocation(void* base);
// The allocation holding [p, p + bytes), if any.
std::optional<SharedAllocation> findSharedAllocation(const void* p, size_t bytes);

}  // namespace hcl
