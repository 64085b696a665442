#include "core/handles.h"

#include <shared_mutex>
#include <unordered_set>

namespace hcl {
namespace {

struct HandleRegistry {
  std::shared_mutex mutex;
  std::unordered_set<const void*> live;
};

HandleRegistry& handles() {
  static HandleRegistry r;
  return r;
}

}  // namespace

void registerHandle(const void* handle) {
  std::unique_lock lock(handles().mutex);
  handles().live.insert(handle);
}

void unregisterHandle(const void* handle) {
  std::unique_lock lock(handles().mutex);
  handles().live.erase(handle);
}

bool isLiveHandle(const void* handle) {
  std::shared_lock lock(handles().mutex);
  return handles().live.count(handle) != 0;
}

bool withLiveHandle(const void* handle, const std::function<void()>& fn) {
  std::shared_lock lock(handles().mutex);
  if (handles().live.count(handle) == 0) return false;
  fn();
  return true;
}

}  // namespace hcl
