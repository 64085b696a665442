#include "core/ipc_area.h"

#include <cstring>

#include "core/deadline.h"

namespace hcl {

IpcArea::IpcArea(Device& device, std::unique_ptr<StreamGate> own) : device_(device), own_(std::move(own)) {}

Status IpcArea::init() {
  HCL_TRY(tables_.allocate(device_, kTables * kIpcMaxRanks * sizeof(IpcSegment)).withContext("IPC segment tables"));
  busy_ = std::make_unique<std::atomic<bool>[]>(kTables);
  return {};
}

Status IpcArea::takeTable(const std::function<Status()>& failure, size_t* slot, IpcSegment** table) {
  Backoff backoff;
  while (true) {
    for (size_t i = 0; i < kTables; ++i) {
      const size_t s = (next_ + i) % kTables;
      bool expected = false;
      if (busy_[s].compare_exchange_strong(expected, true, std::memory_order_acquire)) {
        next_ = (s + 1) % kTables;
        *slot = s;
        *table = reinterpret_cast<IpcSegment*>(tables_.data()) + s * kIpcMaxRanks;
        for (int k = 0; k < kIpcMaxRanks; ++k) (*table)[k] = IpcSegment{};
        return {};
      }
    }
    HCL_TRY(failure());
    backoff.pause();
  }
}

void IpcArea::freeTable(size_t slot) { busy_[slot].store(false, std::memory_order_release); }

Status IpcArea::standIns(size_t bytes, std::byte** out) {
  if (standIns_.size() < bytes) HCL_TRY(standIns_.allocate(device_, bytes).withContext("IPC stand-in buffers"));
  *out = standIns_.data();
  return {};
}

IpcPeerMappings::~IpcPeerMappings() {
  for (const Entry& e : open_) (void)device_.ipcClose(e.base);
}

Status IpcPeerMappings::open(int peer, const DeviceIpcHandle& handle, void** base) {
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->peer == peer && std::memcmp(it->handle.bytes, handle.bytes, sizeof handle.bytes) == 0) {
      open_.splice(open_.begin(), open_, it);
      *base = it->base;
      return {};
    }
  }
  void* mapped = nullptr;
  HCL_TRY(device_.ipcOpen(handle, &mapped).withContext("mapping rank " + std::to_string(peer) + "'s buffer"));
  open_.push_front(Entry{peer, handle, mapped});
  if (open_.size() > kMaxOpen) {
    (void)device_.ipcClose(open_.back().base);
    open_.pop_back();
  }
  *base = mapped;
  return {};
}

}  // namespace hcl
