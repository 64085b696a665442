#include "core/staging.h"

namespace hcl {

DeviceAllocation::~DeviceAllocation() { release(); }

void DeviceAllocation::release() {
  if (ptr_) (void)(kind_ == Kind::Pinned ? device_->freePinned(ptr_) : device_->freeDevice(ptr_));
  ptr_ = nullptr;
  bytes_ = 0;
}

Status DeviceAllocation::allocate(Device& device, size_t bytes) {
  release();
  device_ = &device;
  HCL_TRY(kind_ == Kind::Pinned ? device.allocPinned(bytes, &ptr_) : device.allocDevice(bytes, &ptr_));
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
  if (device_.kind() != DeviceKind::Cpu) HCL_TRY(cpuDevice().createCopyQueue(hostCopies_));
  return {};
}

Status StagingArea::p2pBuffer(size_t bytes, std::byte** out) {
  if (p2p_.size() < bytes) HCL_TRY(p2p_.allocate(device_, bytes).withContext("point-to-point staging buffer"));
  *out = p2p_.data();
  return {};
}

}  // namespace hcl
