// Memory of whole pages, for buffers a network registers: a registration
// pins whole pages, and under libibverbs' fork protection (RDMAV_FORK_SAFE)
// keeps them from forked children, so no other data may share them.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace hcl::netplugin {

class PageBuffer {
 public:
  PageBuffer() = default;
  // data() stays null where the memory cannot be had.
  explicit PageBuffer(size_t bytes) : size_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      size_ = 0;
    } else {
      data_ = static_cast<uint8_t*>(p);
    }
  }
  ~PageBuffer() {
    if (data_) munmap(data_, size_);
  }
  PageBuffer(PageBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PageBuffer& operator=(PageBuffer&& o) noexcept {
    if (this != &o) {
      PageBuffer gone(std::move(*this));
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hcl::netplugin
