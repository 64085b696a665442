#include "collectives/algorithms/pairwise.h"

#include "collectives/algorithms/schedule_start.h"

namespace hcl {

Schedule pairwiseAlltoAll(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "pairwise";
  ScheduleBuilder b(s);
  const int n = a.nranks;
  const size_t block = a.count * dataTypeSize(a.type);
  // In place, blocks are overwritten while peers may still be reading them:
  // send from a staged copy instead.
  BufferRef src = sendAt(0);
  if (a.inPlace && n > 1) {
    s.scratchBytes = block * static_cast<size_t>(n);
    b.copy(scratchAt(0), sendAt(0), s.scratchBytes);
    src = scratchAt(0);
  }
  for (int i = 1; i < n; ++i) {
    const int to = (a.rank + i) % n, from = (a.rank - i + n) % n;
    b.recv(from, recvAt(static_cast<size_t>(from) * block), block);
    b.send(to, {src.id, src.offset + static_cast<size_t>(to) * block, 0}, block);
  }
  b.copy(recvAt(static_cast<size_t>(a.rank) * block),
         {src.id, src.offset + static_cast<size_t>(a.rank) * block, 0}, block);
  return s;
}

Schedule directGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "direct";
  ScheduleBuilder b(s);
  const size_t block = a.count * dataTypeSize(a.type);
  if (a.rank != a.root) {
    b.send(a.root, sendAt(0), block);
    return s;
  }
  for (int p = 0; p < a.nranks; ++p) {
    if (p != a.rank) b.recv(p, recvAt(static_cast<size_t>(p) * block), block);
  }
  b.copy(recvAt(static_cast<size_t>(a.rank) * block), sendAt(0), block);
  return s;
}

Schedule directScatter(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "direct";
  ScheduleBuilder b(s);
  const size_t block = a.count * dataTypeSize(a.type);
  if (a.rank != a.root) {
    b.recv(a.root, recvAt(0), block);
    return s;
  }
  for (int p = 0; p < a.nranks; ++p) {
    if (p != a.rank) b.send(p, sendAt(static_cast<size_t>(p) * block), block);
  }
  b.copy(recvAt(0), sendAt(static_cast<size_t>(a.rank) * block), block);
  return s;
}

}  // namespace hcl
