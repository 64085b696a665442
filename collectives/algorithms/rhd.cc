#include "collectives/algorithms/rhd.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

constexpr uint32_t kNoTransfer = UINT32_MAX;

// Which ranks take part in the power-of-two exchanges, as "virtual ranks"
// 0..p-1 (see rhd.h). On a power-of-two count of ranks with a pairing order
// (ranks pinned to shared CPUs: CollArgs::pairingOrder), the all-gather
// takes the ranks' places in it as virtual ranks, so ranks on one CPU meet
// in the last exchanges (emitDoublingByBlocks). The reduce-scatter's halving
// keeps the ranks' order: loading its input by place cost more than the
// order gained (4 ranks pinned two per CPU, docs/performance.md); the
// all-reduce was not measured with one.
struct Folding {
  int n = 1, p = 1, extra = 0;
  std::vector<int> virtualOf, rankAt;  // with an order: each rank's virtual rank, and back

  Folding(const CollArgs& a, bool followPairingOrder) : n(a.nranks) {
    while (p * 2 <= n) p *= 2;
    extra = n - p;
    if (extra != 0 || !followPairingOrder || !a.pairingOrder) return;
    const std::vector<int>& order = *a.pairingOrder;
    virtualOf = order;
    rankAt.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) rankAt[static_cast<size_t>(order[static_cast<size_t>(r)])] = r;
  }
  bool permuted() const { return !virtualOf.empty(); }
  bool foldsAway(int r) const { return r < 2 * extra && r % 2 == 1; }
  bool standsForPartner(int r) const { return r < 2 * extra && r % 2 == 0; }
  int virtualRank(int r) const {
    if (permuted()) return virtualOf[static_cast<size_t>(r)];
    return r < 2 * extra ? r / 2 : r - extra;
  }
  int realRank(int v) const {
    if (permuted()) return rankAt[static_cast<size_t>(v)];
    return v < extra ? 2 * v : v + extra;
  }
  // The first rank (NCCL block) that virtual rank v stands for; p gives n.
  int firstBlock(int v) const { return v + std::min(v, extra); }
};

// starts[v] .. starts[v + 1] (elements) is the share of the vector that
// virtual rank v owns after the reduce-scatter; p + 1 entries.
using ShareStarts = std::vector<size_t>;

// An even split, for AllReduce.
ShareStarts balancedShares(size_t total, int p) {
  ShareStarts starts(static_cast<size_t>(p) + 1);
  const size_t base = total / static_cast<size_t>(p), extra = total % static_cast<size_t>(p);
  for (size_t v = 0; v < starts.size(); ++v) starts[v] = v * base + std::min(v, extra);
  return starts;
}

// The NCCL blocks of the ranks each virtual rank stands for, for
// ReduceScatter and AllGather.
ShareStarts blockShares(const Folding& f, size_t blockElems) {
  ShareStarts starts(static_cast<size_t>(f.p) + 1);
  for (int v = 0; v <= f.p; ++v) starts[static_cast<size_t>(v)] = static_cast<size_t>(f.firstBlock(v)) * blockElems;
  return starts;
}

struct Range {
  size_t begin = 0, count = 0;  // elements (blockRuns: bytes)
};

// The shares of virtual ranks [lo, hi).
Range sharesOf(const ShareStarts& starts, int lo, int hi) {
  const size_t b = starts[static_cast<size_t>(lo)], e = starts[static_cast<size_t>(hi)];
  return {b, e - b};
}

// The most a rank receives in one halving step: the larger half, at the first.
size_t largestHalf(const ShareStarts& starts, int p) {
  return std::max(sharesOf(starts, 0, p / 2).count, sharesOf(starts, p / 2, p).count);
}

// Both ends of a transfer compute the same size, so empty ones are skipped
// on both.
uint32_t sendIfAny(ScheduleBuilder& b, int peer, BufferRef src, size_t bytes) {
  return bytes ? b.send(peer, src, bytes) : kNoTransfer;
}
uint32_t recvIfAny(ScheduleBuilder& b, int peer, BufferRef dst, size_t bytes) {
  return bytes ? b.recv(peer, dst, bytes) : kNoTransfer;
}
void waitIfAny(ScheduleBuilder& b, uint32_t transfer) {
  if (transfer != kNoTransfer) b.wait(transfer);
}

Schedule newSchedule(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "rhd";
  return s;
}

// The odd rank of a pair: sends its whole input (Acc) to its partner, then
// receives its result. Returns the scratch it needs.
size_t emitFoldAway(ScheduleBuilder& b, const CollArgs& a, size_t inputCount, BufferRef result, size_t resultBytes) {
  const size_t accBytes = inputCount * accumulatorSize(a.type);
  BufferRef src = sendAt(0);
  if (!a.loadIsIdentity) {
    b.convert(scratchAt(0), Form::Acc, sendAt(0), Form::Native, inputCount);
    src = scratchAt(0);
  }
  // In place, the result overwrites the input, so the send must be done.
  waitIfAny(b, sendIfAny(b, a.rank - 1, src, accBytes));
  waitIfAny(b, recvIfAny(b, a.rank - 1, result, resultBytes));
  return a.loadIsIdentity ? 0 : accBytes;
}

// The even rank of a pair: acc = partner's input (Acc) + own input (Native).
void emitFoldIn(ScheduleBuilder& b, const CollArgs& a, size_t inputCount, BufferRef acc) {
  waitIfAny(b, recvIfAny(b, a.rank + 1, acc, inputCount * accumulatorSize(a.type)));
  b.reduce(acc, Form::Acc, acc, Form::Acc, sendAt(0), Form::Native, inputCount);
}

// Reduce-scatter by recursive halving among the virtual ranks. The partial
// result lives in scratch at `accOffset`, in Acc form, laid out like the whole
// vector; while `partialInSendBuffer`, this rank's input has not been loaded
// yet and the first exchange loads it (each element once). Afterwards the
// rank's own share is fully reduced there. `incomingOffset` is scratch for
// largestHalf() accumulators.
void emitHalving(ScheduleBuilder& b, const CollArgs& a, const Folding& f, const ShareStarts& shares,
                 bool partialInSendBuffer, size_t accOffset, size_t incomingOffset) {
  const int v = f.virtualRank(a.rank);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  auto acc = [&](size_t elem) { return scratchAt(accOffset + elem * as); };
  const BufferRef incoming = scratchAt(incomingOffset);
  for (int half = f.p / 2; half >= 1; half /= 2) {
    const int lo = v & ~(2 * half - 1), mid = lo + half, hi = lo + 2 * half;
    const bool upper = (v & half) != 0;
    const Range keep = upper ? sharesOf(shares, mid, hi) : sharesOf(shares, lo, mid);
    const Range give = upper ? sharesOf(shares, lo, mid) : sharesOf(shares, mid, hi);
    const int partner = f.realRank(v ^ half);

    const uint32_t rt = recvIfAny(b, partner, incoming, keep.count * as);
    BufferRef giveSrc = acc(give.begin);
    if (partialInSendBuffer && a.loadIsIdentity) {
      giveSrc = sendAt(give.begin * es);
    } else if (partialInSendBuffer) {
      b.convert(giveSrc, Form::Acc, sendAt(give.begin * es), Form::Native, give.count);
    }
    const uint32_t st = sendIfAny(b, partner, giveSrc, give.count * as);
    waitIfAny(b, rt);
    if (partialInSendBuffer) {
      b.reduce(acc(keep.begin), Form::Acc, incoming, Form::Acc, sendAt(keep.begin * es), Form::Native, keep.count);
    } else {
      b.reduce(acc(keep.begin), Form::Acc, incoming, Form::Acc, acc(keep.begin), Form::Acc, keep.count);
    }
    // Later steps overwrite what it reads (in place, even the send buffer).
    waitIfAny(b, st);
    partialInSendBuffer = false;
  }
}

// All-gather by recursive doubling among the virtual ranks, in the receive
// buffer: each starts with its own share and the exchanged ranges double.
void emitDoubling(ScheduleBuilder& b, const CollArgs& a, const Folding& f, const ShareStarts& shares) {
  const int v = f.virtualRank(a.rank);
  const size_t es = dataTypeSize(a.type);
  for (int size = 1; size < f.p; size *= 2) {
    const int mine = v & ~(size - 1), theirs = mine ^ size;
    const Range have = sharesOf(shares, mine, mine + size), get = sharesOf(shares, theirs, theirs + size);
    const int partner = f.realRank(v ^ size);
    const uint32_t rt = recvIfAny(b, partner, recvAt(get.begin * es), get.count * es);
    const uint32_t st = sendIfAny(b, partner, recvAt(have.begin * es), have.count * es);
    waitIfAny(b, rt);
    waitIfAny(b, st);
  }
}

// The NCCL blocks of the ranks at virtual ranks [lo, hi), as runs of
// consecutive blocks in rank order (bytes).
std::vector<Range> blockRuns(const Folding& f, int lo, int hi, size_t blockBytes) {
  std::vector<int> ranks;
  for (int v = lo; v < hi; ++v) ranks.push_back(f.realRank(v));
  std::sort(ranks.begin(), ranks.end());
  std::vector<Range> runs;
  for (int q : ranks) {
    const size_t at = static_cast<size_t>(q) * blockBytes;
    if (!runs.empty() && runs.back().begin + runs.back().count == at) {
      runs.back().count += blockBytes;
    } else {
      runs.push_back({at, blockBytes});
    }
  }
  return runs;
}

// emitDoubling for an all-gather whose virtual ranks are places in a pairing
// order: the blocks a rank holds are its group's, wherever the ranks put
// them, so each exchange moves them as runs of consecutive blocks (both
// ends list the same runs in the same order).
void emitDoublingByBlocks(ScheduleBuilder& b, const CollArgs& a, const Folding& f, size_t blockBytes) {
  const int v = f.virtualRank(a.rank);
  for (int size = 1; size < f.p; size *= 2) {
    const int mine = v & ~(size - 1), theirs = mine ^ size;
    const int partner = f.realRank(v ^ size);
    std::vector<uint32_t> transfers;
    for (const Range& run : blockRuns(f, theirs, theirs + size, blockBytes)) {
      transfers.push_back(recvIfAny(b, partner, recvAt(run.begin), run.count));
    }
    for (const Range& run : blockRuns(f, mine, mine + size, blockBytes)) {
      transfers.push_back(sendIfAny(b, partner, recvAt(run.begin), run.count));
    }
    for (uint32_t t : transfers) waitIfAny(b, t);
  }
}

}  // namespace

Schedule rhdAllReduce(const CollArgs& a) {
  Schedule s = newSchedule(a);
  ScheduleBuilder b(s);
  const int r = a.rank;
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  const Folding f(a, false);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  if (f.foldsAway(r)) {
    s.scratchBytes = emitFoldAway(b, a, a.count, recvAt(0), a.count * es);
    return s;
  }
  const ShareStarts shares = balancedShares(a.count, f.p);
  const size_t accBytes = a.count * as;
  s.scratchBytes = accBytes + largestHalf(shares, f.p) * as;
  const bool hasPartner = f.standsForPartner(r);
  if (hasPartner) emitFoldIn(b, a, a.count, scratchAt(0));
  emitHalving(b, a, f, shares, !hasPartner, 0, accBytes);
  const int v = f.virtualRank(r);
  const Range mine = sharesOf(shares, v, v + 1);
  b.convert(recvAt(mine.begin * es), Form::Native, scratchAt(mine.begin * as), Form::Acc, mine.count);
  emitDoubling(b, a, f, shares);
  if (hasPartner) waitIfAny(b, sendIfAny(b, r + 1, recvAt(0), a.count * es));
  return s;
}

Schedule rhdReduceScatter(const CollArgs& a) {
  Schedule s = newSchedule(a);
  ScheduleBuilder b(s);
  const int r = a.rank;
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  const Folding f(a, false);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  const size_t total = a.count * static_cast<size_t>(a.nranks);
  if (f.foldsAway(r)) {
    s.scratchBytes = emitFoldAway(b, a, total, recvAt(0), a.count * es);
    return s;
  }
  const ShareStarts shares = blockShares(f, a.count);
  const size_t accBytes = total * as;
  s.scratchBytes = accBytes + largestHalf(shares, f.p) * as;
  const bool hasPartner = f.standsForPartner(r);
  if (hasPartner) emitFoldIn(b, a, total, scratchAt(0));
  emitHalving(b, a, f, shares, !hasPartner, 0, accBytes);
  // The share is this rank's block and, with a partner, the next one.
  const size_t blockAccBytes = a.count * as;
  b.convert(recvAt(0), Form::Native, scratchAt(static_cast<size_t>(r) * blockAccBytes), Form::Acc, a.count);
  if (hasPartner) {
    // Rounded here, once, and sent in the data type.
    const BufferRef theirs = scratchAt(static_cast<size_t>(r + 1) * blockAccBytes);
    b.convert(theirs, Form::Native, theirs, Form::Acc, a.count);
    waitIfAny(b, sendIfAny(b, r + 1, theirs, a.count * es));
  }
  return s;
}

Schedule rhdAllGather(const CollArgs& a) {
  Schedule s = newSchedule(a);
  ScheduleBuilder b(s);
  const int r = a.rank;
  const size_t blockBytes = a.count * dataTypeSize(a.type);
  const size_t allBytes = blockBytes * static_cast<size_t>(a.nranks);
  b.copy(recvAt(static_cast<size_t>(r) * blockBytes), sendAt(0), blockBytes);
  if (a.nranks == 1) return s;
  const Folding f(a, true);
  if (f.foldsAway(r)) {
    // In place, the result overwrites the input, so the send must be done.
    waitIfAny(b, sendIfAny(b, r - 1, sendAt(0), blockBytes));
    waitIfAny(b, recvIfAny(b, r - 1, recvAt(0), allBytes));
    return s;
  }
  const bool hasPartner = f.standsForPartner(r);
  if (f.permuted()) {
    emitDoublingByBlocks(b, a, f, blockBytes);
    return s;
  }
  if (hasPartner) waitIfAny(b, recvIfAny(b, r + 1, recvAt(static_cast<size_t>(r + 1) * blockBytes), blockBytes));
  emitDoubling(b, a, f, blockShares(f, a.count));
  if (hasPartner) waitIfAny(b, sendIfAny(b, r + 1, recvAt(0), allBytes));
  return s;
}

}  // namespace hcl
