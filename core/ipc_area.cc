#include "core/ipc_area.h"

#include <cstring>
#include <iterator>

#include "core/deadline.h"
#include "core/log.h"

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
  if (standIns_.size() < bytes) {
    // Whole 2 MiB blocks: a GPU runtime exports smaller allocations badly
    // (device/gpu/gpu_device.cc, ipcExport).
    const size_t block = size_t{2} << 20;
    HCL_TRY(standIns_.allocate(device_, (bytes + block - 1) / block * block).withContext("IPC stand-in buffers"));
  }
  *out = standIns_.data();
  return {};
}

IpcPeerMappings::~IpcPeerMappings() {
  retired_.splice(retired_.end(), open_);
  closeRetired();
  if (!retired_.empty()) {
    // Closing now could wait for a stream that waits on another
    // communicator: the runtime unmaps them when the process ends.
    log::info(log::Destroy, "IPC: {} peer mapping(s) left open: a stream of the device waits on a gate",
              retired_.size());
  }
}

void IpcPeerMappings::closeRetired() {
  while (!retired_.empty()) {
    const Status s = device_.ipcClose(retired_.back().base);
    if (s.code() == hclInProgress) return;
    if (!s.ok()) log::warn(log::Alloc, "IPC: closing a peer mapping: {}", s.message());
    retired_.pop_back();
  }
}

Status IpcPeerMappings::open(int peer, const DeviceIpcHandle& handle, void** base) {
  const auto same = [&](const Entry& e) {
    return e.peer == peer && std::memcmp(e.handle.bytes, handle.bytes, sizeof handle.bytes) == 0;
  };
  for (std::list<Entry>* from : {&open_, &retired_}) {
    for (auto it = from->begin(); it != from->end(); ++it) {
      if (!same(*it)) continue;
      open_.splice(open_.begin(), *from, it);
      *base = it->base;
      retireBeyondBound();
      return {};
    }
  }
  void* mapped = nullptr;
  HCL_TRY(device_.ipcOpen(handle, &mapped).withContext("mapping rank " + std::to_string(peer) + "'s buffer"));
  open_.push_front(Entry{peer, handle, mapped});
  retireBeyondBound();
  *base = mapped;
  return {};
}

void IpcPeerMappings::retireBeyondBound() {
  while (open_.size() > kMaxOpen) retired_.splice(retired_.end(), open_, std::prev(open_.end()));
}

}  // namespace hcl
