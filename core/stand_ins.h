// Pinned host stand-ins for the device buffers of operations that run as
// host operations while their stream waits (core/stream_launch.cc): where
// each buffer stands, and which ones the stream copies in before and out
// after.
#pragma once

#include <cstddef>
#include <vector>

#include "core/group.h"

namespace hcl {

class Device;

struct StandIns {
  struct Range {
    std::byte* start;
    size_t bytes;
    size_t offset;  // in the block
    bool copyIn, copyOut;
  };
  std::vector<Range> ranges;
  size_t bytes = 0;  // the block's size
  // The stand-in of `user` (device memory inside one of the ranges) in the
  // block at `base`; nullptr for memory outside them.
  std::byte* at(std::byte* base, const void* user) const;
};

// The stand-ins of the operations' device buffers (those `device` owns).
// Buffers that overlap share one stand-in, so an operation that reads what
// an earlier one wrote sees it, as it would on the device.
StandIns standInsFor(Device& device, const std::vector<PendingOp>& ops);

// The operations with their device buffers replaced by their stand-ins in
// the block at `base`, as host operations (no stream).
std::vector<PendingOp> onStandIns(std::vector<PendingOp> ops, const StandIns& standIns, std::byte* base);

}  // namespace hcl
