// A communicator's bounce buffers and copy queues for the host-staged path,
// allocated once, at its first staged operation, in the device's pinned
// host memory.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "device/device.h"

namespace hcl {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  Status allocate(Device& device, size_t bytes);
  std::byte* data() const { return static_cast<std::byte*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
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
  // Pinned memory for point-to-point staging, at least `bytes` (grows).
  Status p2pBuffer(size_t bytes, std::byte** out);
  bool p2pFits(size_t bytes) const { return p2p_.size() >= bytes; }

 private:
  Device& device_;
  size_t slotBytes_;
  int slots_;
  PinnedBuffer in_, out_, p2p_;
  std::unique_ptr<CopyQueue> toHost_, toDevice_;
};

}  // namespace hcl
