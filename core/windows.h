// Windows registered with hclCommWindowRegister. Host memory needs no
// registration for HCL's transports, so a window records the range and the
// flags all ranks agreed on; its handle lets hclCommWindowDeregister tell a
// live window of this communicator from a made-up or released one.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "hcl.h"

namespace hcl {

struct Window {
  void* buffer = nullptr;
  size_t bytes = 0;
  int flags = HCL_WIN_DEFAULT;
};

class Windows {
 public:
  hclWindow_t add(const Window& w) {
    auto entry = std::make_unique<Window>(w);
    auto handle = reinterpret_cast<hclWindow_t>(entry.get());
    std::lock_guard lock(mutex_);
    live_.emplace(handle, std::move(entry));
    return handle;
  }
  // False if `handle` is not a live window.
  bool remove(hclWindow_t handle) {
    std::lock_guard lock(mutex_);
    return live_.erase(handle) > 0;
  }
  // The window `handle` stands for, if live.
  bool find(hclWindow_t handle, Window& out) {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(handle);
    if (it == live_.end()) return false;
    out = *it->second;
    return true;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<hclWindow_t, std::unique_ptr<Window>> live_;
};

}  // namespace hcl
