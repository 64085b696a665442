#include "core/handles.h"

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <unordered_set>

namespace hcl {
namespace {

struct HandleRegistry {
  std::shared_mutex mutex;
  std::unordered_set<const void*> live;
  // Bumped after every removal: a handle found live stays live until then.
  std::atomic<uint64_t> removals{0};
};

// The last handle this thread found live, and the removal count then: a loop
// of calls on one communicator checks it without taking the lock.
thread_local const void* tlsLastLive = nullptr;
thread_local uint64_t tlsRemovalsSeen = 0;

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
  handles().removals.fetch_add(1, std::memory_order_release);
}

bool isLiveHandle(const void* handle) {
  // Read before the lookup: a removal after it makes the next call look again.
  const uint64_t removals = handles().removals.load(std::memory_order_acquire);
  if (handle != nullptr && handle == tlsLastLive && removals == tlsRemovalsSeen) return true;
  std::shared_lock lock(handles().mutex);
  if (handles().live.count(handle) == 0) return false;
  tlsLastLive = handle;
  tlsRemovalsSeen = removals;
  return true;
}

bool withLiveHandle(const void* handle, const std::function<void()>& fn) {
  std::shared_lock lock(handles().mutex);
  if (handles().live.count(handle) == 0) return false;
  fn();
  return true;
}

}  // namespace hcl
