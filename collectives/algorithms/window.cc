#include "collectives/algorithms/window.h"

#include <algorithm>
#include <vector>

#include "collectives/algorithms/direct_steps.h"
#include "collectives/algorithms/schedule_start.h"
#include "core/store_policy.h"

namespace hcl {
namespace {

using namespace direct;

// A rank's scratch: [in: two slices per peer | out: two slices | tmp | acc].
// Slices alternate between the two of each pair, so a rank stages slice
// g+1 while its peers still read slice g. Peers compute offsets in it, so
// the layout depends only on the call.
struct Window {
  size_t slice = 0;  // bytes per region
  int n = 0;
  size_t in(int owner, int reader, size_t g) const {
    const auto place = static_cast<size_t>((reader - owner - 1 + n) % n);  // reader's place in peersAfter(owner)
    return (2 * place + g % 2) * slice;
  }
  size_t out(size_t g) const { return (2 * static_cast<size_t>(n - 1) + g % 2) * slice; }
  size_t tmp() const { return 2 * static_cast<size_t>(n) * slice; }
  size_t acc() const { return tmp() + slice; }
  size_t bytes() const { return acc() + (n > 2 ? slice : 0); }
};

// Where ranks share CPUs (and so each core's cache), a rank's window stays
// within this, so that more ranks take smaller slices and the windows stay
// in cache beside the calls' buffers: 4 ranks on 2 cores (ten regions) took
// 0.75-0.9x the time with 256 or 307 KiB slices as with 512 KiB from 2 to
// 16 MiB (docs/performance.md). Not measured where every rank has a CPU of
// its own, where more slices also mean more messages.
constexpr size_t kWindowBytesSharedCpus = 3u << 20;
static_assert(kWindowBytesSharedCpus <= kMaxWindowBytes);

}  // namespace

Schedule windowAllReduce(const CollArgs& a) {
  Schedule s = beginSchedule(a, "window");
  ScheduleBuilder b(s);
  if (a.count == 0 || reduceAlone(b, a)) return s;
  const int n = a.nranks, r = a.rank;
  const std::vector<int> peers = peersAfter(r, n);
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  const size_t largest = shardOf(a.count, n, 0).len;  // rank 0's shard is never smaller
  const size_t width = std::max(es, as), regions = 2 * static_cast<size_t>(n) + 2;
  const size_t budget = a.sharedCpus ? kWindowBytesSharedCpus : kMaxWindowBytes;
  const size_t fits = budget / regions / kAlign * kAlign / width;  // rounding up stays within
  const size_t S = std::max<size_t>(1, std::min({sliceElements(a), largest, fits}));
  const Window w{roundUp(S * width, kAlign), n};
  s.scratchBytes = w.bytes();
  s.scratchTurns = windowTurns(w.bytes());
  // Results the next call still finds in cache go through it.
  const bool pastCache = sumStoresFor(a.count * es, n, a.cpuFamily, a.sharedCpus) != SumStores::Cached;
  const auto sliceOf = [&](int owner, size_t g) {
    const Shard sh = shardOf(a.count, n, owner);
    const size_t lo = std::min(sh.len, g * S), hi = std::min(sh.len, (g + 1) * S);
    return Shard{sh.begin + lo, hi - lo};
  };
  // Our input for every peer's slice g, into the window they read.
  const auto stage = [&](size_t g) {
    b.only(Only::Staged);
    for (int q : peers) {
      const Shard theirs = sliceOf(q, g);
      b.copy(scratchAt(w.in(r, q, g)), sendAt(theirs.begin * es), theirs.len * es);
    }
    b.only(Only::Always);
    return signalPeers(b, peers, peers);
  };

  // Per slice g and peer, two messages each way: "slice g is staged" and
  // "slice g is reduced" (which also says the peer is done with the inputs
  // we staged for it). Each window pair is rewritten only after the peer's
  // message that it finished reading the previous use.
  openPeers(b, r, peers);
  // Each rank reads only its peers' windows, laid out from its own count.
  for (int q : peers) b.checkPeerSizes(q);
  const size_t rounds = (largest + S - 1) / S;
  std::vector<uint32_t> staged = stage(0);
  for (size_t g = 0; g < rounds; ++g) {
    b.waitAll(staged);
    const Shard mine = sliceOf(r, g);
    const size_t off = mine.begin * es, bytes = mine.len * es;
    if (mine.len > 0) {
      b.only(Only::Staged);
      reduceAcrossPeers(
          b, peers, sendAt(off), [&](int q) { return peerScratchAt(w.in(q, r, g)); }, es, mine.len,
          scratchAt(w.out(g)), true, scratchAt(w.tmp()), scratchAt(w.acc()));
      b.copy(recvAt(off), scratchAt(w.out(g)), bytes, pastCache);
      // With every buffer shareable: the direct algorithm, straight between
      // the peers' buffers.
      b.only(Only::Direct);
      reduceAcrossPeers(
          b, peers, sendAt(off), [&](int) { return peerSendAt(off); }, es, mine.len, recvAt(off), !a.inPlace,
          scratchAt(w.tmp()), scratchAt(w.acc()));
      for (int q : peers) b.writePeer(q, peerRecvAt(off), recvAt(off), bytes);
      b.only(Only::Always);
    }
    const std::vector<uint32_t> reduced = signalPeers(b, peers, peers);
    if (g + 1 < rounds) staged = stage(g + 1);  // while the peers finish slice g
    b.waitAll(reduced);
    b.only(Only::Staged);
    for (int q : peers) {
      const Shard theirs = sliceOf(q, g);
      if (theirs.len == 0) continue;
      b.readPeer(q, recvAt(theirs.begin * es), peerScratchAt(w.out(g)), theirs.len * es, pastCache);
    }
    b.only(Only::Always);
  }
  signalPeers(b, peers, peers);
  return s;
}

}  // namespace hcl
