// Buffers registered with hclCommRegister, and windows registered with
// hclCommWindowRegister. The CPU transports need no registration of host
// memory, so each only records the range (and a window the flags all ranks
// agreed on); its handle lets the deregistration tell a live registration
// of this communicator from a made-up or already released one.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "hcl.h"

namespace hcl {

// Live entries, each known by its handle (the entry's address).
template <typename Entry, typename Handle>
class LiveHandles {
 public:
  Handle add(const Entry& e) {
    auto entry = std::make_unique<Entry>(e);
    auto handle = reinterpret_cast<Handle>(entry.get());
    std::lock_guard lock(mutex_);
    live_.emplace(handle, std::move(entry));
    return handle;
  }
  // False if `handle` is not a live entry.
  bool remove(Handle handle) {
    std::lock_guard lock(mutex_);
    return live_.erase(handle) > 0;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<Handle, std::unique_ptr<Entry>> live_;
};

struct Registration {
  void* buffer = nullptr;
  size_t bytes = 0;
};
using Registrations = LiveHandles<Registration, void*>;

struct Window {
  void* buffer = nullptr;
  size_t bytes = 0;
  int flags = HCL_WIN_DEFAULT;
};
using Windows = LiveHandles<Window, hclWindow_t>;

}  // namespace hcl
