// The sim device's memory: host pages that hold every byte XOR-scrambled, so
// code that reads device memory directly, instead of copying it through the
// device, sees garbage and fails its checks. Allocations are shared memfd
// mappings, so another process on the host can map them (the sim's IPC).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "core/status.h"
#include "device/device.h"

namespace hcl::sim {

inline constexpr uint8_t kScramble = 0xA5;

// Copies `bytes`, scrambling or unscrambling on the way when exactly one
// side is device memory.
void transfer(void* dst, bool dstDevice, const void* src, bool srcDevice, size_t bytes);

class MemoryMap {
 public:
  ~MemoryMap();
  void* allocate(size_t bytes);
  bool release(void* ptr);  // false: not an allocation of this map
  // Whether `ptr` falls inside a live allocation, or a peer's one mapped here.
  bool contains(const void* ptr) const;

  // IPC: the allocation holding `ptr` as a handle, a peer's handle mapped
  // here, and such a mapping undone.
  Status exportHandle(const void* ptr, DeviceIpcHandle* handle, uint64_t* offset) const;
  Status openHandle(const DeviceIpcHandle& handle, void** base);
  Status closeHandle(void* base);

 private:
  struct Block {
    size_t bytes = 0;
    int fd = -1;           // -1: a peer's allocation, mapped here
    uint64_t serial = 0;
  };
  const std::pair<const uintptr_t, Block>* find(uintptr_t p) const;

  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;
  uint64_t nextSerial_ = 1;
};

// Whether this process may take a file descriptor from a sibling process
// (pidfd_getfd), which the sim's IPC needs.
bool canOpenPeerHandles(std::string* whyNot);

}  // namespace hcl::sim
