#include "collectives/algorithms/hier_steps.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace hcl::hier {
namespace {

constexpr size_t kMovementSliceFactor = 8;  // as the flat ring: no scratch, fewer handshakes
constexpr size_t kScratchAlignment = 64;

size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

// Round `round` of a chunk read as the concatenation of its ranges and cut
// in `slice`-element pieces: the parts of its ranges that fall in
// [round * slice, (round + 1) * slice) of that concatenation.
Chunk sliceOf(const Chunk& chunk, size_t round, size_t slice) {
  const size_t lo = round * slice, hi = lo + slice;
  Chunk pieces;
  size_t at = 0;  // where the current range starts in the concatenation
  for (const Range& r : chunk) {
    const size_t from = std::max(lo, at), to = std::min(hi, at + r.len);
    if (to > from) pieces.push_back({r.begin + (from - at), to - from});
    at += r.len;
  }
  return pieces;
}

size_t roundsFor(const std::vector<Chunk>& chunks, size_t slice) {
  size_t rounds = 0;
  for (const Chunk& c : chunks) rounds = std::max(rounds, ceilDiv(totalLength(c), slice));
  return rounds;
}

// Elements of the largest round of any chunk (round 0 is the largest).
size_t largestRound(const std::vector<Chunk>& chunks, size_t slice) {
  size_t most = 0;
  for (const Chunk& c : chunks) most = std::max(most, std::min(slice, totalLength(c)));
  return most;
}

size_t position(size_t me, size_t back, size_t n) { return (me + n - back % n) % n; }

}  // namespace

size_t totalLength(const Chunk& chunk) {
  size_t total = 0;
  for (const Range& r : chunk) total += r.len;
  return total;
}

std::vector<Chunk> balancedChunks(Range whole, size_t parts) {
  std::vector<Chunk> chunks(parts);
  const size_t base = whole.len / parts, extra = whole.len % parts;
  size_t at = whole.begin;
  for (size_t k = 0; k < parts; ++k) {
    const size_t len = base + (k < extra ? 1 : 0);
    chunks[k] = {{at, len}};
    at += len;
  }
  return chunks;
}

Placement Placement::linear(BufferRef base, Form form, size_t elemBytes) {
  Placement p(form, elemBytes);
  p.add({0, SIZE_MAX}, base);
  return p;
}

Placement Placement::packed(const Chunk& chunk, size_t offset, Form form, size_t elemBytes) {
  Placement p(form, elemBytes);
  for (const Range& r : chunk) {
    p.add(r, scratchAt(offset));
    offset += r.len * elemBytes;
  }
  return p;
}

BufferRef Placement::at(size_t elem) const {
  auto it = spans_.upper_bound(elem);
  assert(it != spans_.begin());
  --it;
  assert(elem - it->first < it->second.len);
  BufferRef ref = it->second.base;
  ref.offset += (elem - it->first) * elemBytes_;
  return ref;
}

size_t ScratchArena::take(size_t bytes) {
  const size_t at = top_;
  top_ += ceilDiv(bytes, kScratchAlignment) * kScratchAlignment;
  peak_ = std::max(peak_, top_);
  return at;
}

Emitter::Emitter(const CollArgs& a, Schedule& schedule)
    : args(a),
      b(schedule),
      nativeBytes(dataTypeSize(a.type)),
      accBytes(accumulatorSize(a.type)),
      reduceSlice(std::max<size_t>(1, a.chunkBytes / std::max<size_t>(1, accumulatorSize(a.type)))),
      moveSlice(std::max<size_t>(
          1, a.chunkBytes * kMovementSliceFactor / std::max<size_t>(1, dataTypeSize(a.type)))) {}

Placement Emitter::takeAccumulators(const Chunk& chunk) {
  return Placement::packed(chunk, scratch.take(totalLength(chunk) * accBytes), Form::Acc, accBytes);
}

std::vector<uint32_t> sendChunk(Emitter& e, int peer, const Chunk& chunk, const Placement& from) {
  std::vector<uint32_t> transfers;
  for (const Range& r : chunk)
    if (r.len > 0) transfers.push_back(e.b.send(peer, from.at(r.begin), r.len * from.elemBytes()));
  return transfers;
}

std::vector<uint32_t> recvChunk(Emitter& e, int peer, const Chunk& chunk, const Placement& into) {
  std::vector<uint32_t> transfers;
  for (const Range& r : chunk)
    if (r.len > 0) transfers.push_back(e.b.recv(peer, into.at(r.begin), r.len * into.elemBytes()));
  return transfers;
}

void convertChunk(Emitter& e, const Placement& dst, const Placement& src, const Chunk& chunk) {
  for (const Range& r : chunk)
    if (r.len > 0) e.b.convert(dst.at(r.begin), dst.form(), src.at(r.begin), src.form(), r.len);
}

void ringReduceScatter(Emitter& e, const std::vector<int>& ring, size_t me, const std::vector<Chunk>& chunks,
                       const Placement& in, const Placement& out) {
  const size_t n = ring.size();
  if (n == 1) {
    convertChunk(e, out, in, chunks[0]);
    return;
  }
  const int next = ring[(me + 1) % n], prev = ring[position(me, 1, n)];
  const size_t slice = e.reduceSlice, rounds = roundsFor(chunks, slice);
  const size_t bytes = largestRound(chunks, slice) * e.accBytes;
  const size_t mark = e.scratch.mark();
  const size_t incoming = e.scratch.take(bytes);
  const size_t outgoing[2] = {e.scratch.take(bytes), e.scratch.take(bytes)};
  const bool sendsInDirectly = in.form() == Form::Acc || e.args.loadIsIdentity;
  const auto accAt = [&](const Chunk& pieces, size_t offset) {
    return Placement::packed(pieces, offset, Form::Acc, e.accBytes);
  };

  for (size_t g = 0; g < rounds; ++g) {
    for (size_t s = 0; s + 1 < n; ++s) {
      const Chunk sendPieces = sliceOf(chunks[position(me, s + 1, n)], g, slice);
      const Chunk recvPieces = sliceOf(chunks[position(me, s + 2, n)], g, slice);
      // At step s > 0 the chunk sent is the one received and reduced at s - 1.
      Placement src = accAt(sendPieces, outgoing[s % 2]);
      if (s == 0 && sendsInDirectly) {
        src = in;
      } else if (s == 0) {
        convertChunk(e, src, in, sendPieces);
      }
      const Placement tmp = accAt(recvPieces, incoming);
      const auto recvs = recvChunk(e, prev, recvPieces, tmp);
      const auto sends = sendChunk(e, next, sendPieces, src);
      e.b.waitAll(recvs);
      const Placement dst = s + 2 < n ? accAt(recvPieces, outgoing[(s + 1) % 2]) : out;
      for (const Range& r : recvPieces)
        e.b.reduce(dst.at(r.begin), dst.form(), tmp.at(r.begin), Form::Acc, in.at(r.begin), in.form(), r.len);
      e.b.waitAll(sends);  // the slices they read are rewritten two steps on
    }
  }
  e.scratch.release(mark);
}

void ringAllGather(Emitter& e, const std::vector<int>& ring, size_t me, const std::vector<Chunk>& chunks,
                   const Placement& buf) {
  const size_t n = ring.size();
  if (n == 1) return;
  const int next = ring[(me + 1) % n], prev = ring[position(me, 1, n)];
  const size_t slice = e.moveSlice, rounds = roundsFor(chunks, slice);
  for (size_t g = 0; g < rounds; ++g) {
    for (size_t s = 0; s + 1 < n; ++s) {
      const auto recvs = recvChunk(e, prev, sliceOf(chunks[position(me, s + 1, n)], g, slice), buf);
      sendChunk(e, next, sliceOf(chunks[position(me, s, n)], g, slice), buf);
      e.b.waitAll(recvs);
    }
  }
}

void sendAsAccumulators(Emitter& e, const std::vector<std::pair<int, Chunk>>& parts, const Placement& in) {
  std::vector<uint32_t> sends;
  if (in.form() == Form::Acc || e.args.loadIsIdentity) {
    for (const auto& [peer, chunk] : parts) {
      const auto posted = sendChunk(e, peer, chunk, in);
      sends.insert(sends.end(), posted.begin(), posted.end());
    }
    e.b.waitAll(sends);
    return;
  }
  // Loaded through two staging buffers, each reused once its sends are done.
  size_t biggest = 0;
  for (const auto& part : parts) biggest = std::max(biggest, totalLength(part.second));
  const size_t mark = e.scratch.mark();
  const size_t staging[2] = {e.scratch.take(biggest * e.accBytes), e.scratch.take(biggest * e.accBytes)};
  std::vector<uint32_t> inFlight[2];
  for (size_t k = 0; k < parts.size(); ++k) {
    const auto& [peer, chunk] = parts[k];
    e.b.waitAll(inFlight[k % 2]);
    const Placement staged = Placement::packed(chunk, staging[k % 2], Form::Acc, e.accBytes);
    convertChunk(e, staged, in, chunk);
    inFlight[k % 2] = sendChunk(e, peer, chunk, staged);
  }
  e.b.waitAll(inFlight[0]);
  e.b.waitAll(inFlight[1]);
  e.scratch.release(mark);
}

Placement addContributions(Emitter& e, const std::vector<int>& contributors, const Chunk& chunk,
                           const Placement& acc, const Placement& sum) {
  if (contributors.empty()) return acc;
  const size_t mark = e.scratch.mark();
  const Placement tmp[2] = {e.takeAccumulators(chunk), e.takeAccumulators(chunk)};
  Placement running = acc;
  std::vector<uint32_t> pending = recvChunk(e, contributors[0], chunk, tmp[0]);
  for (size_t k = 0; k < contributors.size(); ++k) {
    std::vector<uint32_t> next;
    if (k + 1 < contributors.size()) next = recvChunk(e, contributors[k + 1], chunk, tmp[(k + 1) % 2]);
    e.b.waitAll(pending);
    for (const Range& r : chunk)
      if (r.len > 0)
        e.b.reduce(sum.at(r.begin), Form::Acc, tmp[k % 2].at(r.begin), Form::Acc, running.at(r.begin),
                   running.form(), r.len);
    running = sum;
    pending = std::move(next);
  }
  e.scratch.release(mark);
  return sum;
}

}  // namespace hcl::hier
