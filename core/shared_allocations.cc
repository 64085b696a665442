#include "core/shared_allocations.h"

#include <map>
#include <mutex>

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

std::optional<SharedAllocation> removeSharedAllocation(void* base) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.byBase.find(reinterpret_cast<uintptr_t>(base));
  if (it == r.byBase.end()) return std::nullopt;
  SharedAllocation a = it->second;
  r.byBase.erase(it);
  return a;
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

}  // namespace hcl
