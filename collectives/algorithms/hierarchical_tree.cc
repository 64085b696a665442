// Broadcast and Reduce along the hierarchical tree (hier_groups.h).
#include <algorithm>

#include "collectives/algorithms/hier_groups.h"
#include "collectives/algorithms/hierarchical.h"
#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

Schedule startSchedule(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "hier";
  return s;
}

// Pipeline slices of `count` elements of `elemBytes` each.
struct Slices {
  size_t perSlice, count;
  size_t number() const { return (count + perSlice - 1) / perSlice; }
  size_t begin(size_t k) const { return k * perSlice; }
  size_t len(size_t k) const { return std::min(perSlice, count - begin(k)); }
};

Slices slicesFor(const CollArgs& a, size_t elemBytes) {
  const size_t perSlice = std::max<size_t>(1, a.chunkBytes / std::max<size_t>(1, elemBytes));
  return {std::min(perSlice, a.count), a.count};
}

constexpr uint32_t kNone = UINT32_MAX;

}  // namespace

Schedule hierBroadcast(const CollArgs& a) {
  Schedule s = startSchedule(a);
  if (a.count == 0) return s;
  ScheduleBuilder b(s);
  const size_t es = dataTypeSize(a.type);
  const bool isRoot = a.rank == a.root;
  if (isRoot && !a.inPlace) b.copy(recvAt(0), sendAt(0), a.count * es);
  const hier::TreeLinks links = hier::broadcastTree(hier::usableLevels(a), a.nranks, a.root, a.rank);
  const Slices slices = slicesFor(a, es);
  std::vector<uint32_t> recvs;
  if (!isRoot) {  // every receive is posted up front
    for (size_t k = 0; k < slices.number(); ++k)
      recvs.push_back(b.recv(links.parent, recvAt(slices.begin(k) * es), slices.len(k) * es));
  }
  for (size_t k = 0; k < slices.number(); ++k) {
    if (!isRoot) b.wait(recvs[k]);
    const size_t off = slices.begin(k) * es;
    for (int child : links.children) b.send(child, isRoot ? sendAt(off) : recvAt(off), slices.len(k) * es);
  }
  return s;
}

Schedule hierReduce(const CollArgs& a) {
  Schedule s = startSchedule(a);
  if (a.count == 0) return s;
  ScheduleBuilder b(s);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  const hier::TreeLinks links = hier::broadcastTree(hier::usableLevels(a), a.nranks, a.root, a.rank);
  const bool isRoot = links.parent < 0;
  const Slices slices = slicesFor(a, as);
  const size_t nChildren = links.children.size();
  // Scratch: two receive slices per child, then two outgoing slices.
  const size_t sliceBytes = slices.perSlice * as;
  const auto incoming = [&](size_t child, size_t parity) { return scratchAt((2 * child + parity) * sliceBytes); };
  const auto outgoing = [&](size_t parity) { return scratchAt((2 * nChildren + parity) * sliceBytes); };
  s.scratchBytes = (2 * nChildren + 2) * sliceBytes;

  std::vector<std::vector<uint32_t>> recvs(2, std::vector<uint32_t>(nChildren, kNone));
  uint32_t sends[2] = {kNone, kNone};
  const auto postReceives = [&](size_t k) {
    for (size_t c = 0; c < nChildren; ++c)
      recvs[k % 2][c] = b.recv(links.children[c], incoming(c, k % 2), slices.len(k) * as);
  };
  postReceives(0);
  for (size_t k = 0; k < slices.number(); ++k) {
    const size_t p = k % 2, off = slices.begin(k) * es, len = slices.len(k);
    if (k + 1 < slices.number()) postReceives(k + 1);
    if (!isRoot && sends[p] != kNone) b.wait(sends[p]);  // out[p] is about to be rewritten
    if (nChildren == 0) {  // a leaf: its own data, as partials
      if (a.loadIsIdentity) {
        b.send(links.parent, sendAt(off), len * as);
      } else {
        b.convert(outgoing(p), Form::Acc, sendAt(off), Form::Native, len);
        sends[p] = b.send(links.parent, outgoing(p), len * as);
      }
      continue;
    }
    BufferRef running = sendAt(off);
    Form runningForm = Form::Native;
    for (size_t c = 0; c < nChildren; ++c) {
      b.wait(recvs[p][c]);
      const bool last = c + 1 == nChildren;
      const BufferRef dst = last && isRoot ? recvAt(off) : outgoing(p);
      const Form dstForm = last && isRoot ? Form::Native : Form::Acc;
      b.reduce(dst, dstForm, incoming(c, p), Form::Acc, running, runningForm, len);
      running = dst;
      runningForm = dstForm;
    }
    if (!isRoot) sends[p] = b.send(links.parent, outgoing(p), len * as);
  }
  return s;
}

}  // namespace hcl
