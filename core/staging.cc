#include "core/staging.h"

namespace hcl {

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) (void)device_->freePinned(ptr_);
}

Status PinnedBuffer::allocate(Device& device, size_t bytes) {
  if (ptr_) (void)device_->freePinned(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
  device_ = &device;
  HCL_TRY(device.allocPinned(bytes, &ptr_));
  bytes_ = bytes;
  return {};
}

StagingArea::StagingArea(Device& device, size_t slotBytes, int slots)
    : device_(device), slotBytes_(slotBytes), slots_(slots) {}

Status StagingArea::init() {
  const size_t total = slotBytes_ * static_cast<size_t>(slots_);
  HCL_TRY(in_.allocate(device_, total).withContext("staging buffers"));
  HCL_TRY(out_.allocate(device_, total).withContext("staging buffers"));
  HCL_TRY(device_.createCopyQueue(toHost_));
  HCL_TRY(device_.createCopyQueue(toDevice_));
  return {};
}

Status StagingArea::p2pBuffer(size_t bytes, std::byte** out) {
  if (p2p_.size() < bytes) HCL_TRY(p2p_.allocate(device_, bytes).withContext("point-to-point staging buffer"));
  *out = p2p_.data();
  return {};
}

}  // namespace hcl
