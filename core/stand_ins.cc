#include "core/stand_ins.h"

#include <algorithm>

#include "core/communicator.h"
#include "core/staged_layout.h"
#include "device/device.h"

namespace hcl {

std::byte* StandIns::at(std::byte* base, const void* user) const {
  const auto* p = static_cast<const std::byte*>(user);
  for (const Range& r : ranges) {
    if (p >= r.start && p < r.start + r.bytes) return base + r.offset + static_cast<size_t>(p - r.start);
  }
  return nullptr;
}

StandIns standInsFor(Device& device, const std::vector<PendingOp>& ops) {
  struct Use {
    std::byte* start;
    size_t bytes;
    bool read;
  };
  std::vector<Use> uses;
  auto use = [&](const void* p, size_t bytes, bool read) {
    if (bytes > 0 && device.isDeviceMemory(p)) uses.push_back({static_cast<std::byte*>(const_cast<void*>(p)), bytes, read});
  };
  for (const PendingOp& op : ops) {
    const size_t elem = dataTypeSize(op.type);
    if (op.kind == CollKind::SendRecv) {
      use(op.isSend ? op.send : op.recv, op.count * elem, op.isSend);
      continue;
    }
    const StageLayout l = stageLayout(op.kind, op.comm->rank(), op.comm->nranks(), op.root);
    if (l.readsInput) use(op.send, l.inBlocks * op.count * elem, true);
    if (l.writesOutput) use(op.recv, l.outBlocks * op.count * elem, false);
    if (op.scalarPointer) use(op.scalarPointer, elem, true);
  }
  std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.start < b.start; });
  StandIns g;
  for (size_t i = 0; i < uses.size();) {
    StandIns::Range r{uses[i].start, uses[i].bytes, g.bytes, false, false};
    std::vector<const Use*> writes;
    for (; i < uses.size() && uses[i].start < r.start + r.bytes; ++i) {
      const Use& u = uses[i];
      r.bytes = std::max(r.bytes, static_cast<size_t>(u.start + u.bytes - r.start));
      if (u.read) r.copyIn = true;
      if (!u.read) writes.push_back(&u);
    }
    r.copyOut = !writes.empty();
    // What no single operation writes whole must keep its contents through
    // the copy back.
    const bool oneWriteCoversAll =
        writes.size() == 1 && writes[0]->start == r.start && writes[0]->bytes == r.bytes;
    if (r.copyOut && !oneWriteCoversAll) r.copyIn = true;
    g.bytes += (r.bytes + 63) / 64 * 64;
    g.ranges.push_back(r);
  }
  return g;
}

std::vector<PendingOp> onStandIns(std::vector<PendingOp> ops, const StandIns& standIns, std::byte* base) {
  for (PendingOp& op : ops) {
    op.stream = nullptr;
    if (std::byte* p = standIns.at(base, op.send)) op.send = p;
    if (std::byte* p = standIns.at(base, op.recv)) op.recv = p;
    if (op.scalarPointer) {
      if (std::byte* p = standIns.at(base, op.scalarPointer)) op.scalarPointer = p;
    }
  }
  return ops;
}

}  // namespace hcl
