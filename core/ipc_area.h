// What the same-vendor IPC path keeps per communicator: the segment tables
// its calls' kernels read (pinned host memory, one per call in flight) and
// device stand-ins for buffers in host memory, per stream; and the peers'
// allocations mapped into this process.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <utility>

#include "core/staging.h"
#include "device/device.h"

namespace hcl {

class IpcArea {
 public:
  static constexpr size_t kTables = 64;
  // `own`: a gate the area owns, for calls made without a stream.
  IpcArea(Device& device, std::unique_ptr<StreamGate> own);
  Status init();
  StreamGate* ownGate() { return own_.get(); }
  // A zeroed table with room for kIpcMaxRanks segments. Waits while every
  // table is in use; gives up with what `failure` returns once it is not ok.
  Status takeTable(const std::function<Status()>& failure, size_t* slot, IpcSegment** table);
  void freeTable(size_t slot);
  // Device memory for stand-ins, at least `bytes`. Growing frees the old
  // block (standInsGrowthFreesBlock): the caller first lets earlier calls on
  // the stream finish.
  Status standIns(size_t bytes, std::byte** out);
  bool standInsGrowthFreesBlock(size_t bytes) const { return standIns_.size() > 0 && standIns_.size() < bytes; }

 private:
  Device& device_;
  DeviceAllocation tables_{DeviceAllocation::Kind::Pinned};
  std::unique_ptr<std::atomic<bool>[]> busy_;
  size_t next_ = 0;
  DeviceAllocation standIns_{DeviceAllocation::Kind::Device};
  std::unique_ptr<StreamGate> own_;  // last: its stream drains before the tables go
};

// Peers' allocations mapped here, kept open for the next calls (opening is
// slow); beyond a bound the least recently used are retired, and closed
// once the device lets them be: a GPU's close waits for the whole device,
// so it is put off while a stream waits on a gate (device.h). A call maps
// its peers while its own stream waits, so retired mappings are closed
// after calls end (closeRetired).
class IpcPeerMappings {
 public:
  static constexpr size_t kMaxOpen = 64;
  explicit IpcPeerMappings(Device& device) : device_(device) {}
  ~IpcPeerMappings();
  IpcPeerMappings(const IpcPeerMappings&) = delete;
  IpcPeerMappings& operator=(const IpcPeerMappings&) = delete;
  Status open(int peer, const DeviceIpcHandle& handle, void** base);
  // Closes the retired mappings that the device lets close now.
  void closeRetired();
  size_t openCount() const { return open_.size(); }
  size_t retiredCount() const { return retired_.size(); }

 private:
  struct Entry {
    int peer;
    DeviceIpcHandle handle;
    void* base;
  };
  void retireBeyondBound();

  Device& device_;
  std::list<Entry> open_;  // most recently used first
  // Out of open_ and not yet closed: the runtime refuses to map such an
  // allocation again ("already mapped"), so open() takes it back from here.
  std::list<Entry> retired_;
};

}  // namespace hcl
