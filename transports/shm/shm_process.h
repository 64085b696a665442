// What the shm transport needs to know about, and take from, the peer process.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace hcl::shm {

// process_vm_readv of `bytes` at `remoteAddress` in `pid` into `local`.
// Returns the bytes read, or -1 with *error set to errno.
ssize_t readProcessMemory(int64_t pid, uint64_t remoteAddress, void* local, size_t bytes,
                          int* error);

// process_vm_writev of `bytes` from `local` to `remoteAddress` in `pid`.
// Returns the bytes written, or -1 with *error set to errno.
ssize_t writeProcessMemory(int64_t pid, uint64_t remoteAddress, const void* local, size_t bytes,
                           int* error);

// kill(pid, 0) finds no such process.
bool processInvisible(int64_t pid);

// The process is gone or a zombie (dead, not yet reaped by its parent).
bool processExited(int64_t pid);

}  // namespace hcl::shm
