#include "collectives/algorithms/direct_access.h"

#include <algorithm>
#include <vector>

#include "collectives/algorithms/direct_steps.h"
#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

using namespace direct;

Schedule begin(const CollArgs& a) { return beginSchedule(a, "direct"); }

// Scratch for reducing one slice: [tmp: slice Native | acc: slice Acc | out: slice Native].
struct SliceScratch {
  size_t tmp = 0, acc = 0, out = 0, bytes = 0;
};

SliceScratch sliceScratch(const CollArgs& a, size_t sliceElems, bool needOut) {
  SliceScratch sc;
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  sc.acc = roundUp(sliceElems * es, kAlign);
  sc.out = sc.acc + (a.nranks > 2 ? roundUp(sliceElems * as, kAlign) : 0);
  sc.bytes = sc.out + (needOut ? sliceElems * es : 0);
  return sc;
}

// dst (Native) = the reduction over all ranks of `m` elements at byte offset
// `inOff` of each rank's send buffer.
void reduceSlice(ScheduleBuilder& b, const CollArgs& a, const std::vector<int>& peers, const SliceScratch& sc,
                 size_t es, size_t inOff, size_t m, BufferRef dst) {
  // An in-place reduce-scatter's output is its own block of the input
  // (recvbuff = sendbuff + rank * count), which a.inPlace does not flag.
  const bool dstApart = dst.id == BufferId::Scratch ||
                        (!a.inPlace && (a.kind == CollKind::AllReduce || a.kind == CollKind::Reduce));
  reduceAcrossPeers(
      b, peers, sendAt(inOff), [&](int) { return peerSendAt(inOff); }, es, m, dst, dstApart, scratchAt(sc.tmp),
      scratchAt(sc.acc));
}

// This rank's shard of an allreduce or reduce, slice by slice: each slice is
// reduced over all ranks into `into(offset)`, then handed to `deliver`.
template <typename Into, typename Deliver>
Schedule reduceShard(const CollArgs& a, bool needOut, Into into, Deliver deliver) {
  Schedule s = begin(a);
  ScheduleBuilder b(s);
  if (a.count == 0) return s;
  const std::vector<int> peers = peersAfter(a.rank, a.nranks);
  const size_t es = dataTypeSize(a.type), S = shardSliceElements(a);
  const Shard mine = shardOf(a.count, a.nranks, a.rank);
  const SliceScratch sc = sliceScratch(a, std::min(S, std::max<size_t>(1, mine.len)), needOut);
  s.scratchBytes = peers.empty() ? 0 : sc.bytes;
  openPeers(b, a.rank, peers);
  for (size_t done = 0; done < mine.len; done += S) {
    const size_t m = std::min(S, mine.len - done), off = (mine.begin + done) * es;
    const BufferRef out = into(sc, off);
    reduceSlice(b, a, peers, sc, es, off, m, out);
    deliver(b, peers, out, off, m * es);
  }
  signalPeers(b, peers, peers);
  return s;
}

// Every rank's `block` bytes at offset `from` of its send buffer, into
// `into(rank)`: ours copied, each peer's pulled. Returns the receives of the
// peers' "done" messages.
template <typename Into>
std::vector<uint32_t> gatherBlocks(ScheduleBuilder& b, const CollArgs& a, size_t block, size_t from, Into into) {
  const std::vector<int> peers = peersAfter(a.rank, a.nranks);
  b.copy(into(a.rank), sendAt(from), block, ownBlockPastCache(block, a.nranks));
  openPeers(b, a.rank, peers);
  for (int p : peers) b.readPeer(p, into(p), peerSendAt(from), block);
  return signalPeers(b, peers, peers);
}

}  // namespace

Schedule directAllReduce(const CollArgs& a) {
  return reduceShard(
      a, false, [](const SliceScratch&, size_t off) { return recvAt(off); },
      [](ScheduleBuilder& b, const std::vector<int>& peers, BufferRef out, size_t off, size_t bytes) {
        for (int p : peers) b.writePeer(p, peerRecvAt(off), out, bytes);
      });
}

Schedule directReduce(const CollArgs& a) {
  const bool root = a.rank == a.root;
  return reduceShard(
      a, !root, [&](const SliceScratch& sc, size_t off) { return root ? recvAt(off) : scratchAt(sc.out); },
      [&](ScheduleBuilder& b, const std::vector<int>&, BufferRef out, size_t off, size_t bytes) {
        if (!root) b.writePeer(a.root, peerRecvAt(off), out, bytes);
      });
}

Schedule directReduceScatter(const CollArgs& a) {
  Schedule s = begin(a);
  ScheduleBuilder b(s);
  if (a.count == 0) return s;
  const std::vector<int> peers = peersAfter(a.rank, a.nranks);
  const size_t es = dataTypeSize(a.type), S = shardSliceElements(a);
  const SliceScratch sc = sliceScratch(a, std::min(S, a.count), false);
  s.scratchBytes = peers.empty() ? 0 : sc.bytes;
  openPeers(b, a.rank, peers);
  const size_t block = static_cast<size_t>(a.rank) * a.count;
  for (size_t done = 0; done < a.count; done += S) {
    const size_t m = std::min(S, a.count - done);
    reduceSlice(b, a, peers, sc, es, (block + done) * es, m, recvAt(done * es));
  }
  signalPeers(b, peers, peers);
  return s;
}

Schedule directAllGather(const CollArgs& a) {
  Schedule s = begin(a);
  ScheduleBuilder b(s);
  const size_t block = a.count * dataTypeSize(a.type);
  if (block == 0) return s;
  gatherBlocks(b, a, block, 0, [&](int p) { return recvAt(static_cast<size_t>(p) * block); });
  return s;
}

// The root would only wait while the others read: it writes the last 1/n of
// every other rank's buffer itself, so all ranks copy about (n-1)/n of a
// buffer at once (2 ranks: twice as fast where copies, not memory, limit).
Schedule directBroadcast(const CollArgs& a) {
  Schedule s = begin(a);
  ScheduleBuilder b(s);
  const size_t es = dataTypeSize(a.type), bytes = a.count * es;
  if (bytes == 0) return s;
  const size_t pushed = a.count / static_cast<size_t>(a.nranks) * es, pulled = bytes - pushed;
  if (a.rank == a.root) {
    if (!a.inPlace) b.copy(recvAt(0), sendAt(0), bytes);
    const std::vector<int> peers = peersAfter(a.rank, a.nranks);
    openPeers(b, a.rank, peers);
    for (int q : peers) b.writePeer(q, peerRecvAt(pulled), sendAt(pulled), pushed);
    signalPeers(b, peers, peers);
    return s;
  }
  openPeers(b, a.rank, {a.root});
  b.readPeer(a.root, recvAt(0), peerSendAt(0), pulled);
  signalPeers(b, {a.root}, {a.root});  // returns once the root's writes are in too
  return s;
}

Schedule directAlltoAll(const CollArgs& a) {
  Schedule s = begin(a);
  ScheduleBuilder b(s);
  const size_t block = a.count * dataTypeSize(a.type);
  if (block == 0) return s;
  const size_t self = static_cast<size_t>(a.rank) * block;
  // In place, our blocks are what peers read: gather into scratch, and
  // overwrite the buffer only once every peer has finished reading it.
  const bool staged = a.inPlace && a.nranks > 1;
  const auto into = [&](int p) {
    const size_t off = static_cast<size_t>(p) * block;
    return staged ? scratchAt(off) : recvAt(off);
  };
  if (staged) s.scratchBytes = block * static_cast<size_t>(a.nranks);
  const std::vector<uint32_t> peersDone = gatherBlocks(b, a, block, self, into);
  if (staged) {
    b.waitAll(peersDone);
    b.copy(recvAt(0), scratchAt(0), s.scratchBytes);
  }
  return s;
}

}  // namespace hcl
