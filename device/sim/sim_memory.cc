#include "device/sim/sim_memory.h"

#include <cstring>

namespace hcl::sim {

void transfer(void* dst, bool dstDevice, const void* src, bool srcDevice, size_t bytes) {
  if (bytes == 0) return;
  if (dstDevice == srcDevice) {
    std::memmove(dst, src, bytes);
    return;
  }
  // Word at a time, so the stand-in copy engine costs little CPU next to the
  // rate it is held to.
  constexpr uint64_t kWord = 0x0101010101010101ull * kScramble;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    w ^= kWord;
    std::memcpy(d + i, &w, 8);
  }
  for (; i < bytes; ++i) d[i] = s[i] ^ kScramble;
}

void* MemoryMap::allocate(size_t bytes) {
  auto block = std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes);
  const auto key = reinterpret_cast<uintptr_t>(block.get());
  std::lock_guard lock(mutex_);
  sizes_[key] = bytes == 0 ? 1 : bytes;
  return (blocks_[key] = std::move(block)).get();
}

bool MemoryMap::release(void* ptr) {
  const auto key = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  if (!blocks_.erase(key)) return false;
  sizes_.erase(key);
  return true;
}

bool MemoryMap::contains(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  auto it = sizes_.upper_bound(p);
  if (it == sizes_.begin()) return false;
  --it;
  return p < it->first + it->second;
}

}  // namespace hcl::sim
