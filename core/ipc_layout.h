// The geometry of a collective on the same-vendor IPC path: which of a
// rank's buffers its peers reach, and the segments (device/device.h
// IpcSegment) each rank runs once it knows every rank's buffers. Each rank
// writes its part straight into the peers' buffers, so a call is one kernel
// per rank between two handshakes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/reduce/reduce.h"
#include "device/device.h"

namespace hcl {

// Whether a collective can take the IPC path at all. Every rank decides
// alike from what the call's arguments share across ranks.
bool ipcServes(CollKind kind, size_t count, ReduceKind op);

// Which of rank args.rank's buffers the call touches, and how many bytes.
struct IpcBufferUse {
  bool send = false, recv = false;
  size_t sendBytes = 0, recvBytes = 0;
};
IpcBufferUse ipcBufferUse(const CollArgs& args);

// What a rank tells its peers about one of its buffers for one call.
struct IpcBufferEntry {
  uint64_t address = 0;  // in the owner's process (peers in the same process use it)
  uint64_t offset = 0;   // from the start of the allocation `handle` names
  uint32_t present = 0;  // 0: the call does not touch this buffer on this rank
  uint32_t pad = 0;
  DeviceIpcHandle handle;
};
struct IpcEntry {
  IpcBufferEntry send, recv;
};

// How many table rows rank args.rank's kernel runs, and the most work items
// in any of them (elements to reduce, or 16-byte pieces to copy).
size_t ipcSegmentRows(const CollArgs& args);
size_t ipcSegmentWidth(const CollArgs& args);

// The segments rank args.rank runs, with every rank's send and receive
// buffers as reachable here (null where a rank's buffer is not touched).
// Fills `out` (room for kIpcMaxRanks) and returns how many.
size_t ipcSegments(const CollArgs& args, const std::vector<const void*>& send, const std::vector<void*>& recv,
                   IpcSegment* out);

}  // namespace hcl
