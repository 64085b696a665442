// A communicator's bounce buffers and copy queues for the host-staged path,
// allocated once, at its first staged operation, in the device's pinned
// host memory.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "device/device.h"

namespace hcl {

// Memory a device allocated, freed with this object: pinned host memory
// (what the copy engines move fastest) or the device's own.
class DeviceAllocation {
 public:
  enum class Kind : uint8_t { Pinned, Device };
  explicit DeviceAllocation(Kind kind) : kind_(kind) {}
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  // Frees what it held, then allocates `bytes`.
  Status allocate(Device& device, size_t bytes);
  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void release();
  Kind kind_;
  Device* device_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class StagingArea {
 public:
  StagingArea(Device& device, size_t slotBytes, int slots);
  Status init();
  size_t slotBytes() const { return slotBytes_; }
  int slots() const { return slots_; }
  std::byte* in(int slot) const { return in_.data() + static_cast<size_t>(slot) * slotBytes_; }
  std::byte* out(int slot) const { return out_.data() + static_cast<size_t>(slot) * slotBytes_; }
  CopyQueue& toHost() { return *toHost_; }
  CopyQueue& toDevice() { return *toDevice_; }
  // For copies between host buffers: a CPU thread's, never the device's, so
  // they run even while a native stream holds the device's queues.
  CopyQueue& hostCopies() { return hostCopies_ ? *hostCopies_ : *toHost_; }
  // Pinned memory for point-to-point staging, at least `bytes` (grows).
  Status p2pBuffer(size_t bytes, std::byte** out);
  // Whether p2pBuffer(bytes) frees a block that earlier calls may still use.
  bool p2pGrowthFreesBlock(size_t bytes) const { return p2p_.size() > 0 && p2p_.size() < bytes; }

 private:
  Device& device_;
  size_t slotBytes_;
  int slots_;
  DeviceAllocation in_{DeviceAllocation::Kind::Pinned}, out_{DeviceAllocation::Kind::Pinned},
      p2p_{DeviceAllocation::Kind::Pinned};
  std::unique_ptr<CopyQueue> toHost_, toDevice_;
  std::unique_ptr<CopyQueue> hostCopies_;  // null on the CPU device: toHost_ is one
};

}  // namespace hcl
