// Buffers registered with hclCommRegister. The CPU transports need no
// registration of host memory, so a registration only records the range;
// its handle lets hclCommDeregister tell a live registration from a
// made-up or already released one.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace hcl {

class Registrations {
 public:
  void* add(void* buffer, size_t bytes) {
    auto entry = std::make_unique<Entry>(Entry{buffer, bytes});
    void* handle = entry.get();
    std::lock_guard lock(mutex_);
    live_.emplace(handle, std::move(entry));
    return handle;
  }
  // False if `handle` is not a live registration.
  bool remove(void* handle) {
    std::lock_guard lock(mutex_);
    return live_.erase(handle) > 0;
  }

 private:
  struct Entry {
    void* buffer;
    size_t bytes;
  };
  std::mutex mutex_;
  std::unordered_map<const void*, std::unique_ptr<Entry>> live_;
};

}  // namespace hcl
