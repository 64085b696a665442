// The sim device's memory: host pages that hold every byte XOR-scrambled, so
// code that reads device memory directly, instead of copying it through the
// device, sees garbage and fails its checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace hcl::sim {

inline constexpr uint8_t kScramble = 0xA5;

// Copies `bytes`, scrambling or unscrambling on the way when exactly one
// side is device memory.
void transfer(void* dst, bool dstDevice, const void* src, bool srcDevice, size_t bytes);

class MemoryMap {
 public:
  void* allocate(size_t bytes);
  bool release(void* ptr);  // false: not an allocation of this map
  // Whether `ptr` falls inside a live allocation.
  bool contains(const void* ptr) const;

 private:
  mutable std::mutex mutex_;
  std::map<uintptr_t, std::unique_ptr<std::byte[]>> blocks_;
  std::map<uintptr_t, size_t> sizes_;
};

}  // namespace hcl::sim
