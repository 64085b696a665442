#include "collectives/algorithms/ring.h"

#include <algorithm>

#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

constexpr size_t kMovementSliceFactor = 8;

// Elements per pipeline slice: chunkBytes worth, but never more than the
// largest piece there is to move (small messages need small scratch).
size_t sliceElements(const CollArgs& a, size_t elemBytes, size_t largestPiece) {
  const size_t s = std::max<size_t>(1, a.chunkBytes / std::max<size_t>(1, elemBytes));
  return std::max<size_t>(1, std::min(s, largestPiece));
}

// How the buffer is cut into one chunk per rank: chunk c starts at start(c)
// (elements, relative to the buffer) and has len(c) elements.
struct Chunks {
  size_t base = 0, extra = 0;  // balanced split of a total
  size_t fixed = 0;            // or a fixed per-rank count
  bool balanced = false;
  size_t start(int c) const {
    if (!balanced) return static_cast<size_t>(c) * fixed;
    const size_t uc = static_cast<size_t>(c);
    return uc * base + std::min(uc, extra);
  }
  size_t len(int c) const {
    if (!balanced) return fixed;
    return base + (static_cast<size_t>(c) < extra ? 1 : 0);
  }
  size_t maxLen() const { return balanced ? base + (extra ? 1 : 0) : fixed; }
};

Chunks balancedChunks(size_t total, int n) {
  Chunks c;
  c.balanced = true;
  c.base = total / static_cast<size_t>(n);
  c.extra = total % static_cast<size_t>(n);
  return c;
}

Chunks fixedChunks(size_t perRank) {
  Chunks c;
  c.fixed = perRank;
  return c;
}

// Slice g of chunk c: [begin, begin+n) in elements, clipped to the chunk.
struct Slice {
  size_t begin = 0, n = 0;
};
Slice sliceOf(const Chunks& ch, int c, size_t g, size_t sliceElems) {
  const size_t lo = std::min(ch.len(c), g * sliceElems);
  const size_t hi = std::min(ch.len(c), (g + 1) * sliceElems);
  return {ch.start(c) + lo, hi - lo};
}

// Reduce-scatter around the ring. At the end rank r holds the finished
// chunk r, written (Native form) at `out(r) + slice offset within chunk`.
// Scratch layout: [tmp | out0 | out1], each one slice of accumulators.
void emitRingReduceScatter(ScheduleBuilder& b, const CollArgs& a, const Chunks& ch,
                           BufferRef finalDst, bool finalDstIsChunkRelative) {
  const int n = a.nranks, r = a.rank;
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  const size_t S = sliceElements(a, as, ch.maxLen());
  const size_t rounds = (ch.maxLen() + S - 1) / S;
  const size_t tmp = 0, out[2] = {S * as, 2 * S * as};

  for (size_t g = 0; g < rounds; ++g) {
    for (int s = 0; s <= n - 2; ++s) {
      const int sendChunk = mod(r - s - 1, n), recvChunk = mod(r - s - 2, n);
      const Slice ss = sliceOf(ch, sendChunk, g, S), rs = sliceOf(ch, recvChunk, g, S);
      BufferRef src;
      if (s == 0) {
        if (a.loadIsIdentity) {
          src = sendAt(ss.begin * es);
        } else {
          b.convert(scratchAt(out[0]), Form::Acc, sendAt(ss.begin * es), Form::Native, ss.n);
          src = scratchAt(out[0]);
        }
      } else {
        src = scratchAt(out[s % 2]);
      }
      const uint32_t rt = b.recv(prev, scratchAt(tmp), rs.n * as);
      const uint32_t st = b.send(next, src, ss.n * as);
      b.wait(rt);
      if (s < n - 2) {
        const int o = (s + 1) % 2;
        b.reduce(scratchAt(out[o]), Form::Acc, scratchAt(tmp), Form::Acc, sendAt(rs.begin * es),
                 Form::Native, rs.n);
      } else {
        size_t off = finalDst.offset;
        off += finalDstIsChunkRelative ? (rs.begin - ch.start(recvChunk)) * es : rs.begin * es;
        b.reduce({finalDst.id, off, 0}, Form::Native, scratchAt(tmp), Form::Acc,
                 sendAt(rs.begin * es), Form::Native, rs.n);
      }
      b.wait(st);  // the scratch slice it read is rewritten two steps on
    }
  }
}

// All-gather around the ring on the receive buffer: rank r's chunk is
// already in place; after n-1 steps every chunk is.
void emitRingAllGather(ScheduleBuilder& b, const CollArgs& a, const Chunks& ch) {
  const int n = a.nranks, r = a.rank;
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  const size_t es = dataTypeSize(a.type);
  // Pure data movement needs no scratch, and every slice costs a handshake
  // with the neighbours, so slices are larger than for reductions.
  CollArgs coarse = a;
  coarse.chunkBytes = a.chunkBytes * kMovementSliceFactor;
  const size_t S = sliceElements(coarse, es, ch.maxLen());
  const size_t rounds = (ch.maxLen() + S - 1) / S;
  for (size_t g = 0; g < rounds; ++g) {
    for (int s = 0; s <= n - 2; ++s) {
      const int sendChunk = mod(r - s, n), recvChunk = mod(r - s - 1, n);
      const Slice ss = sliceOf(ch, sendChunk, g, S), rs = sliceOf(ch, recvChunk, g, S);
      const uint32_t rt = b.recv(prev, recvAt(rs.begin * es), rs.n * es);
      b.send(next, recvAt(ss.begin * es), ss.n * es);
      b.wait(rt);
    }
  }
}

}  // namespace

Schedule ringAllReduce(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "ring";
  ScheduleBuilder b(s);
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  const Chunks ch = balancedChunks(a.count, a.nranks);
  const size_t as = accumulatorSize(a.type);
  s.scratchBytes = 3 * sliceElements(a, as, ch.maxLen()) * as;
  emitRingReduceScatter(b, a, ch, recvAt(0), false);
  emitRingAllGather(b, a, ch);
  return s;
}

Schedule ringReduceScatter(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "ring";
  ScheduleBuilder b(s);
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  const size_t as = accumulatorSize(a.type);
  s.scratchBytes = 3 * sliceElements(a, as, a.count) * as;
  emitRingReduceScatter(b, a, fixedChunks(a.count), recvAt(0), true);
  return s;
}

Schedule ringAllGather(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "ring";
  ScheduleBuilder b(s);
  const size_t es = dataTypeSize(a.type);
  b.copy(recvAt(static_cast<size_t>(a.rank) * a.count * es), sendAt(0), a.count * es);
  if (a.nranks > 1) emitRingAllGather(b, a, fixedChunks(a.count));
  return s;
}

Schedule ringBroadcast(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "ring";
  ScheduleBuilder b(s);
  const int n = a.nranks;
  const size_t es = dataTypeSize(a.type);
  const size_t bytes = a.count * es;
  if (a.rank == a.root && !a.inPlace) b.copy(recvAt(0), sendAt(0), bytes);
  if (n == 1) return s;
  const int pos = mod(a.rank - a.root, n);  // 0 = root, n-1 = end of the chain
  const int next = mod(a.rank + 1, n), prev = mod(a.rank - 1, n);
  const size_t S = sliceElements(a, es, a.count) * es;
  const size_t slices = std::max<size_t>(1, (bytes + S - 1) / S);
  std::vector<uint32_t> recvs(slices);
  if (pos != 0) {
    for (size_t k = 0; k < slices; ++k) {
      const size_t off = k * S, len = std::min(S, bytes - std::min(bytes, off));
      recvs[k] = b.recv(prev, recvAt(off), len);
    }
  }
  for (size_t k = 0; k < slices; ++k) {
    const size_t off = k * S, len = std::min(S, bytes - std::min(bytes, off));
    if (pos != 0) b.wait(recvs[k]);
    if (pos != n - 1) b.send(next, pos == 0 ? sendAt(off) : recvAt(off), len);
  }
  return s;
}

Schedule ringReduce(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "ring";
  ScheduleBuilder b(s);
  const int n = a.nranks;
  if (n == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  // A chain that ends at the root: position 0 starts, n-1 is the root.
  const int pos = mod(a.rank - a.root - 1, n);
  const int next = mod(a.rank + 1, n), prev = mod(a.rank - 1, n);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  const size_t S = sliceElements(a, as, a.count);
  const size_t slices = std::max<size_t>(1, (a.count + S - 1) / S);
  // Scratch: two receive slices and two outgoing slices, alternating.
  const size_t tmp[2] = {0, S * as}, out[2] = {2 * S * as, 3 * S * as};
  s.scratchBytes = 4 * S * as;
  uint32_t sends[2] = {UINT32_MAX, UINT32_MAX};
  uint32_t recvs[2] = {UINT32_MAX, UINT32_MAX};
  auto sliceLen = [&](size_t k) { return std::min(S, a.count - std::min(a.count, k * S)); };
  // The root folds its own vector into what arrives where it arrives: in
  // its receive buffer, when that holds the incoming form and is not also
  // its input. One stream fewer than reducing out of scratch.
  const bool intoRecv = pos == n - 1 && a.loadIsIdentity && !a.inPlace;
  auto incoming = [&](size_t k) {
    return intoRecv ? recvAt(k * S * es) : scratchAt(tmp[k % 2]);
  };
  if (pos != 0) recvs[0] = b.recv(prev, incoming(0), sliceLen(0) * as);
  for (size_t k = 0; k < slices; ++k) {
    const size_t off = k * S, len = sliceLen(k);
    const int p = static_cast<int>(k % 2);
    if (pos == 0) {
      if (a.loadIsIdentity) {
        b.send(next, sendAt(off * es), len * as);
      } else {
        if (sends[p] != UINT32_MAX) b.wait(sends[p]);
        b.convert(scratchAt(out[p]), Form::Acc, sendAt(off * es), Form::Native, len);
        sends[p] = b.send(next, scratchAt(out[p]), len * as);
      }
      continue;
    }
    // Post the next slice's receive before working on this one.
    if (k + 1 < slices) recvs[1 - p] = b.recv(prev, incoming(k + 1), sliceLen(k + 1) * as);
    b.wait(recvs[p]);
    if (pos == n - 1) {
      b.reduce(recvAt(off * es), Form::Native, incoming(k), Form::Acc, sendAt(off * es), Form::Native, len);
    } else {
      if (sends[p] != UINT32_MAX) b.wait(sends[p]);
      b.reduce(scratchAt(out[p]), Form::Acc, scratchAt(tmp[p]), Form::Acc, sendAt(off * es),
               Form::Native, len);
      sends[p] = b.send(next, scratchAt(out[p]), len * as);
    }
  }
  return s;
}

}  // namespace hcl
