#include "core/shared_allocations.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <utility>

namespace hcl {
namespace {

// hclMemAlloc is process-wide, so its bookkeeping is too.
struct Registry {
  std::mutex mutex;
  std::map<uint64_t, SharedAllocation> byBase;
  uint64_t lastSerial = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

uint64_t addSharedAllocation(void* base, size_t bytes, int fd) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const uint64_t at = reinterpret_cast<uintptr_t>(base);
  r.byBase[at] = {at, bytes, ++r.lastSerial, fd};
  return r.lastSerial;
}

bool releaseSharedAllocation(void* base) {
  SharedAllocation a;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.byBase.find(reinterpret_cast<uintptr_t>(base));
    if (it == r.byBase.end()) return false;
    a = it->second;
    r.byBase.erase(it);
  }
  munmap(base, a.bytes);
  close(a.fd);
  return true;
}

std::optional<SharedAllocation> findSharedAllocation(const void* p, size_t bytes) {
  const uint64_t at = reinterpret_cast<uintptr_t>(p);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.byBase.empty()) return std::nullopt;
  auto it = r.byBase.upper_bound(at);
  if (it == r.byBase.begin()) return std::nullopt;
  --it;
  const SharedAllocation& a = it->second;
  if (at + bytes > a.base + a.bytes) return std::nullopt;
  return a;
}

void* mapNewSharedMemory(size_t bytes, int* fd, bool populate) {
  *fd = memfd_create("hcl-mem", MFD_CLOEXEC);
  if (*fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (ftruncate(*fd, static_cast<off_t>(bytes)) == 0) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), *fd, 0);
  }
  if (p == MAP_FAILED) {
    const int err = errno;
    close(*fd);
    *fd = -1;
    errno = err;
    return nullptr;
  }
  return p;
}

ShareableBuffer::ShareableBuffer(size_t bytes, bool shareable) : bytes_(bytes) {
  if (bytes == 0) return;
  if (void* p = shareable ? mapNewSharedMemory(bytes, &fd_, true) : nullptr) {
    data_ = static_cast<std::byte*>(p);
    addSharedAllocation(p, bytes, fd_);
    return;
  }
  heap_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
  data_ = heap_.get();
}

ShareableBuffer::~ShareableBuffer() {
  if (fd_ >= 0) releaseSharedAllocation(data_);
}

void ShareableBuffer::swap(ShareableBuffer& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(bytes_, o.bytes_);
  std::swap(fd_, o.fd_);
  std::swap(heap_, o.heap_);
}

}  // namespace hcl
