#include "core/handles.h"

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <unordered_map>

namespace hcl {
namespace {

enum class Kind : uint8_t { Comm, Stream };

struct HandleRegistry {
  std::shared_mutex mutex;
  std::unordered_map<const void*, Kind> live;
};

// Bumped after every removal: a handle found live stays live until then.
// Outside the registry so that reading it needs no initialisation check.
constinit std::atomic<uint64_t> removals{0};

// The last communicator this thread found live, and the removal count then:
// a loop of calls on one communicator checks it without taking the lock.
struct LastLiveComm {
  const void* comm = nullptr;
  uint64_t removalsSeen = 0;
};
// Read on every call: initial-exec, a load from the thread pointer instead of
// a call into the dynamic linker. The library's thread-locals are a few
// hundred bytes, which the loader's static TLS reserve holds even when the
// library is opened with dlopen.
[[gnu::tls_model("initial-exec")]] constinit thread_local LastLiveComm tlsLastLiveComm;

HandleRegistry& handles() {
  static HandleRegistry r;
  return r;
}

void add(const void* handle, Kind kind) {
  std::unique_lock lock(handles().mutex);
  handles().live[handle] = kind;
}

// Call with the registry's lock held.
bool eraseLocked(const void* handle) {
  const bool erased = handles().live.erase(handle) > 0;
  removals.fetch_add(1, std::memory_order_release);
  return erased;
}

bool remove(const void* handle) {
  std::unique_lock lock(handles().mutex);
  return eraseLocked(handle);
}

// Call with the registry's lock held.
bool liveAs(const void* handle, Kind kind) {
  const auto it = handles().live.find(handle);
  return it != handles().live.end() && it->second == kind;
}

}  // namespace

void registerHandle(const hclComm* comm) { add(comm, Kind::Comm); }
void registerHandle(const hclStream* stream) { add(stream, Kind::Stream); }
bool unregisterHandle(const hclComm* comm) { return remove(comm); }
bool unregisterHandle(const hclStream* stream) { return remove(stream); }

bool unregisterHandleIf(const hclComm* comm, const std::function<bool()>& take) {
  std::unique_lock lock(handles().mutex);
  return liveAs(comm, Kind::Comm) && take() && eraseLocked(comm);
}

bool isLiveHandle(const hclComm* comm) {
  // Read before the lookup: a removal after it makes the next call look again.
  const uint64_t seen = removals.load(std::memory_order_acquire);
  LastLiveComm& last = tlsLastLiveComm;
  if (comm != nullptr && comm == last.comm && seen == last.removalsSeen) return true;
  std::shared_lock lock(handles().mutex);
  if (!liveAs(comm, Kind::Comm)) return false;
  last = {comm, seen};
  return true;
}

bool isLiveHandle(const hclStream* stream) {
  std::shared_lock lock(handles().mutex);
  return liveAs(stream, Kind::Stream);
}

bool withLiveHandle(const hclComm* comm, const std::function<void()>& fn) {
  std::shared_lock lock(handles().mutex);
  if (!liveAs(comm, Kind::Comm)) return false;
  fn();
  return true;
}

}  // namespace hcl
