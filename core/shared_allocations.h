// The process's hclMemAlloc allocations: shared mappings of memfds, which
// peers on the host can map too (transports/shm), so collectives on them read
// and write peers' data without a copy through the kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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
// Forgets the allocation that starts at `base`, unmaps it and closes its
// memfd; false if there is none.
bool releaseSharedAllocation(void* base);
// The allocation holding [p, p + bytes), if any.
std::optional<SharedAllocation> findSharedAllocation(const void* p, size_t bytes);

// A new shared mapping of a new memfd of `bytes` bytes (not registered);
// null with errno set on failure. `populate`: its pages are allocated and
// mapped at once.
void* mapNewSharedMemory(size_t bytes, int* fd, bool populate = false);

// Memory that peers on the host can map too: a registered shared memfd
// mapping, or heap memory where memfds cannot be had (then peers reach it
// through the kernel only).
class ShareableBuffer {
 public:
  ShareableBuffer() = default;
  // Heap memory when `shareable` is false. Shareable memory is populated at
  // once: a call that stages through it takes no page faults.
  ShareableBuffer(size_t bytes, bool shareable);
  ~ShareableBuffer();
  ShareableBuffer(ShareableBuffer&& o) noexcept { swap(o); }
  ShareableBuffer& operator=(ShareableBuffer&& o) noexcept {
    ShareableBuffer(std::move(o)).swap(*this);
    return *this;
  }
  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  void swap(ShareableBuffer& o) noexcept;
  std::byte* data_ = nullptr;
  size_t bytes_ = 0;
  int fd_ = -1;
  std::unique_ptr<std::byte[]> heap_;
};

}  // namespace hcl
