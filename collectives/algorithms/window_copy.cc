#include "collectives/algorithms/window_copy.h"

#include <algorithm>
#include <vector>

#include "collectives/algorithms/direct_access.h"
#include "collectives/algorithms/direct_steps.h"
#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

using namespace direct;

// Regions per reader that slices take in turn (see the loop below for why
// at least three). 2 ranks, 1-4 MiB all-gather: three, 23-28 GB/s; two,
// with each slice staged after reading the last, 22-27.
constexpr size_t kRegions = 3;
// All ranks' outputs together, from which staged ones are stored past the
// cache.
constexpr size_t kStagedStreamFrom = 16u << 20;
// Where ranks share CPUs, the regions that small windows take in turn stay
// within less: 4 ranks on 2 cores, 1 MiB all-to-all, 117-123 us within 1 or
// 2 MiB against 207 within 4 MiB (direct: 156), as pairs of ranks share
// each core's cache.
constexpr size_t kRotateWithinSharedCpus = 2u << 20;

// What moves: for every peer q, `block` bytes from `sendOffset(q)` of our
// send buffer into q's receive buffer, and theirs into ours at
// `recvOffset(q)`.
struct Exchange {
  size_t block = 0;
  bool oneForAll = false;  // all-gather: every peer reads the same bytes
  size_t sendOffset(int q) const { return oneForAll ? 0 : static_cast<size_t>(q) * block; }
  size_t recvOffset(int q) const { return static_cast<size_t>(q) * block; }
};

// A rank's scratch: `regions` regions of `slice` bytes per reader (one set
// for all readers in an all-gather), slice g in region g % regions. A call
// of fewer slices takes as many regions.
struct Window {
  size_t slice = 0, regions = 0;
  int n = 0;
  bool oneForAll = false;
  size_t at(int owner, int reader, size_t g) const {
    const auto place = oneForAll ? 0 : static_cast<size_t>((reader - owner - 1 + n) % n);
    return (regions * place + g % regions) * slice;
  }
  size_t bytes() const { return regions * (oneForAll ? 1 : static_cast<size_t>(n - 1)) * slice; }
};

Schedule exchangeThroughWindows(const CollArgs& a, const Exchange& x) {
  Schedule s = beginSchedule(a, "window");
  ScheduleBuilder b(s);
  if (x.block == 0) return s;
  const int n = a.nranks, r = a.rank;
  const size_t own = x.recvOffset(r);
  if (n == 1) {
    b.copy(recvAt(own), sendAt(x.sendOffset(r)), x.block);
    return s;
  }
  const std::vector<int> peers = peersAfter(r, n);
  const size_t readers = x.oneForAll ? 1 : peers.size();
  const size_t fits = std::max(kAlign, kMaxWindowBytes / (kRegions * readers) / kAlign * kAlign);
  const size_t S = roundUp(std::min({std::max(a.chunkBytes, kAlign), x.block, fits}), kAlign);
  const size_t rounds = (x.block + S - 1) / S;
  const Window w{S, std::min(kRegions, rounds), n, x.oneForAll};
  s.scratchBytes = w.bytes();
  s.scratchTurns = windowTurns(w.bytes(), a.sharedCpus ? kRotateWithinSharedCpus : kRotateWithin);
  // Outputs that the next call would not find in cache are stored past it.
  // Staged, where all ranks' outputs reach 16 MiB (2 ranks, 8 MiB outputs:
  // all-to-all 11.2 GB/s against 8.1 cached; 16 MiB all-gather: 10.7
  // against 7.5). The direct branch's follow the direct all-gather's.
  const size_t hostOutputs = x.block * static_cast<size_t>(n) * static_cast<size_t>(n);
  const bool stagedPastCache = hostOutputs >= kStagedStreamFrom;
  const bool directPastCache = ownBlockPastCache(x.block, n);
  const auto len = [&](size_t g) { return std::min(S, x.block - g * S); };

  // Slice g of our blocks, into the regions our peers read, and of our own
  // block into our output while it is in cache.
  const auto stage = [&](size_t g) {
    b.only(Only::Staged);
    if (x.oneForAll) {
      b.copy(scratchAt(w.at(r, peers[0], g)), sendAt(g * S), len(g));
    } else {
      for (int q : peers) b.copy(scratchAt(w.at(r, q, g)), sendAt(x.sendOffset(q) + g * S), len(g));
    }
    b.copy(recvAt(own + g * S), sendAt(x.sendOffset(r) + g * S), len(g), stagedPastCache);
    b.only(Only::Always);
    return signalPeers(b, peers, peers);
  };

  openPeers(b, r, peers);
  // Each rank reads its peers' windows laid out from its own count.
  for (int q : peers) b.checkPeerSizes(q);
  b.only(Only::Direct);
  b.copy(recvAt(own), sendAt(x.sendOffset(r)), x.block, directPastCache);
  for (int q : peers) b.readPeer(q, recvAt(x.recvOffset(q)), peerSendAt(x.sendOffset(r)), x.block);
  b.only(Only::Always);
  // One message per slice and peer, "slice g is staged", and we stage
  // slice g+1 before we read slice g. A peer stages slice g after it has
  // read our slice g-2, so once we have its slice g, our region of slice
  // g+1 (that of g+1-kRegions) is free again.
  static_assert(kRegions >= 3);
  std::vector<uint32_t> staged = stage(0);
  for (size_t g = 0; g < rounds; ++g) {
    b.waitAll(staged);
    if (g + 1 < rounds) staged = stage(g + 1);
    b.only(Only::Staged);
    for (int q : peers) {
      b.readPeer(q, recvAt(x.recvOffset(q) + g * S), peerScratchAt(w.at(q, r, g)), len(g), stagedPastCache);
    }
    b.only(Only::Always);
  }
  // The run ends once every peer has read all it needs of ours (and, in
  // the direct branch, finished reading our send buffer).
  signalPeers(b, peers, peers);
  return s;
}

}  // namespace

Schedule windowAllGather(const CollArgs& a) {
  return exchangeThroughWindows(a, {.block = a.count * dataTypeSize(a.type), .oneForAll = true});
}

Schedule windowAlltoAll(const CollArgs& a) {
  if (a.inPlace && a.nranks > 1) return directAlltoAll(a);
  return exchangeThroughWindows(a, {.block = a.count * dataTypeSize(a.type), .oneForAll = false});
}

}  // namespace hcl
