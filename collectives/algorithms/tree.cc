#include "collectives/algorithms/tree.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

constexpr uint32_t kNoTransfer = UINT32_MAX;

int mod(int a, int n) { return ((a % n) + n) % n; }

int lowestBit(int p) { return p & -p; }

int largestPowerOfTwoAtMost(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// Positions 1..n form a binary tree in which position p, with lowest set bit
// b, has the children p - b/2 and p + b/2; when p + b/2 is past n, the right
// child is the first of p + b/4, p + b/8, ... that exists. Odd positions are
// exactly the leaves and the root is the largest power of two <= n.
int parentPosition(int p, int n) {
  const int b = lowestBit(p);
  const int up = (p & (2 * b)) ? p - b : p + b;
  return up <= n ? up : p - b;  // p - b is 0 for the root
}

std::array<int, 2> childPositions(int p, int n) {
  std::array<int, 2> children{0, 0};
  const int b = lowestBit(p);
  if (b == 1) return children;
  children[0] = p - b / 2;
  for (int step = b / 2; step >= 1; step /= 2) {
    if (p + step <= n) {
      children[1] = p + step;
      break;
    }
  }
  return children;
}

// Rank r sits at position ((r + shift) mod n) + 1.
TreeLinks linksAt(int rank, int nranks, int shift) {
  const int n = nranks;
  const int position = mod(rank + shift, n) + 1;
  auto rankAt = [&](int pos) { return mod(pos - 1 - shift, n); };
  TreeLinks links;
  const int up = parentPosition(position, n);
  links.parent = up == 0 ? -1 : rankAt(up);
  for (int child : childPositions(position, n)) {
    if (child != 0) links.children[static_cast<size_t>(links.numChildren++)] = rankAt(child);
  }
  return links;
}

// Elements per pipeline slice: chunkBytes worth, but never more than the
// longest piece there is to move (small messages need small scratch).
size_t sliceElements(size_t chunkBytes, size_t elemBytes, size_t longestPiece) {
  const size_t s = std::max<size_t>(1, chunkBytes / std::max<size_t>(1, elemBytes));
  return std::max<size_t>(1, std::min(s, longestPiece));
}

Schedule newSchedule(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "tree";
  return s;
}

// A contiguous range of elements that moves along one tree.
struct TreePart {
  TreeLinks links;
  size_t begin = 0, count = 0;  // elements
  size_t scratch = 0;           // byte offset of this part's scratch slots
};

struct SliceRange {
  size_t begin = 0, count = 0;  // elements
};

size_t sliceCount(const TreePart& part, size_t sliceElems) {
  return (part.count + sliceElems - 1) / sliceElems;
}

SliceRange sliceOf(const TreePart& part, size_t g, size_t sliceElems) {
  const size_t lo = g * sliceElems;
  return {part.begin + lo, std::min(sliceElems, part.count - lo)};
}

size_t roundsFor(std::span<const TreePart> parts, size_t sliceElems) {
  size_t rounds = 0;
  for (const TreePart& p : parts) rounds = std::max(rounds, sliceCount(p, sliceElems));
  return rounds;
}

// Scratch of one part during the reduction, in slices of accumulators: two
// outgoing slots, then two receive slots per child (double-buffered by
// slice parity).
size_t reduceSlots(const TreeLinks& links) { return 2 + 2 * static_cast<size_t>(links.numChildren); }

// Reduction towards the root of every part's tree. A rank combines its
// children's partial results (Acc) with its own input, loaded from Native
// exactly once, and passes the partial up; the root stores the result, once
// rounded, into its receive buffer. Slices of the parts are interleaved, and
// the receives for slice g + 1 are posted before slice g is waited for, so
// children can run ahead of their parent.
class TreeReducer {
 public:
  TreeReducer(ScheduleBuilder& b, const CollArgs& a, std::span<const TreePart> parts, size_t sliceElems)
      : b_(b), a_(a), parts_(parts), sliceElems_(sliceElems), state_(parts.size()) {}

  void emit() {
    for (size_t i = 0; i < parts_.size(); ++i) {
      if (sliceCount(parts_[i], sliceElems_) > 0) postChildReceives(i, 0);
    }
    const size_t rounds = roundsFor(parts_, sliceElems_);
    for (size_t g = 0; g < rounds; ++g) {
      for (size_t i = 0; i < parts_.size(); ++i) {
        const size_t slices = sliceCount(parts_[i], sliceElems_);
        if (g >= slices) continue;
        if (g + 1 < slices) postChildReceives(i, g + 1);
        reduceSlice(i, g);
      }
    }
    // Sends may read the send buffer, which in place is the receive buffer
    // that later phases overwrite.
    for (PartState& st : state_) {
      for (uint32_t& t : st.upSend) waitFor(t);
    }
  }

 private:
  struct PartState {
    std::array<std::array<uint32_t, 2>, 2> childRecv{};  // [child][slice parity]
    std::array<uint32_t, 2> upSend{kNoTransfer, kNoTransfer};  // [slice parity]
  };

  BufferRef slot(const TreePart& p, size_t index) const {
    return scratchAt(p.scratch + index * sliceElems_ * accumulatorSize(a_.type));
  }
  BufferRef outSlot(const TreePart& p, size_t g) const { return slot(p, g % 2); }
  BufferRef childSlot(const TreePart& p, int child, size_t g) const {
    return slot(p, 2 + 2 * static_cast<size_t>(child) + g % 2);
  }

  void waitFor(uint32_t& transfer) {
    if (transfer != kNoTransfer) b_.wait(transfer);
    transfer = kNoTransfer;
  }

  void postChildReceives(size_t i, size_t g) {
    const TreePart& p = parts_[i];
    const SliceRange r = sliceOf(p, g, sliceElems_);
    for (int c = 0; c < p.links.numChildren; ++c) {
      state_[i].childRecv[static_cast<size_t>(c)][g % 2] =
          b_.recv(p.links.children[static_cast<size_t>(c)], childSlot(p, c, g), r.count * accumulatorSize(a_.type));
    }
  }

  void reduceSlice(size_t i, size_t g) {
    const TreePart& p = parts_[i];
    PartState& st = state_[i];
    const SliceRange r = sliceOf(p, g, sliceElems_);
    const size_t es = dataTypeSize(a_.type), accBytes = r.count * accumulatorSize(a_.type);
    const BufferRef own = sendAt(r.begin * es);
    const BufferRef out = outSlot(p, g);
    const bool isRoot = p.links.parent < 0;
    uint32_t& sendOfSlot = st.upSend[g % 2];  // last used two slices ago

    if (p.links.numChildren == 0) {
      if (isRoot) {  // a single rank
        b_.convert(recvAt(r.begin * es), Form::Native, own, Form::Native, r.count);
      } else if (a_.loadIsIdentity) {
        sendOfSlot = b_.send(p.links.parent, own, accBytes);
      } else {
        waitFor(sendOfSlot);
        b_.convert(out, Form::Acc, own, Form::Native, r.count);
        sendOfSlot = b_.send(p.links.parent, out, accBytes);
      }
      return;
    }
    const BufferRef dst = isRoot ? recvAt(r.begin * es) : out;
    const Form dstForm = isRoot ? Form::Native : Form::Acc;
    if (!isRoot) waitFor(sendOfSlot);
    waitFor(st.childRecv[0][g % 2]);
    if (p.links.numChildren == 1) {
      b_.reduce(dst, dstForm, childSlot(p, 0, g), Form::Acc, own, Form::Native, r.count);
    } else {
      b_.reduce(out, Form::Acc, childSlot(p, 0, g), Form::Acc, own, Form::Native, r.count);
      waitFor(st.childRecv[1][g % 2]);
      b_.reduce(dst, dstForm, out, Form::Acc, childSlot(p, 1, g), Form::Acc, r.count);
    }
    if (!isRoot) sendOfSlot = b_.send(p.links.parent, out, accBytes);
  }

  ScheduleBuilder& b_;
  const CollArgs& a_;
  std::span<const TreePart> parts_;
  size_t sliceElems_;
  std::vector<PartState> state_;
};

// Broadcast from the root of every part's tree into the receive buffers
// (Native, final values). Every receive is posted up front, straight into the
// receive buffer, and each slice is forwarded to the children as soon as it
// has arrived. The root's data is in `rootSource`.
void emitBroadcastDown(ScheduleBuilder& b, const CollArgs& a, std::span<const TreePart> parts, size_t sliceElems,
                       BufferId rootSource) {
  const size_t es = dataTypeSize(a.type);
  const size_t rounds = roundsFor(parts, sliceElems);
  std::vector<std::vector<uint32_t>> fromParent(parts.size());
  for (size_t g = 0; g < rounds; ++g) {
    for (size_t i = 0; i < parts.size(); ++i) {
      const TreePart& p = parts[i];
      if (g >= sliceCount(p, sliceElems) || p.links.parent < 0) continue;
      const SliceRange r = sliceOf(p, g, sliceElems);
      fromParent[i].push_back(b.recv(p.links.parent, recvAt(r.begin * es), r.count * es));
    }
  }
  for (size_t g = 0; g < rounds; ++g) {
    for (size_t i = 0; i < parts.size(); ++i) {
      const TreePart& p = parts[i];
      if (g >= sliceCount(p, sliceElems)) continue;
      const SliceRange r = sliceOf(p, g, sliceElems);
      BufferRef src{rootSource, r.begin * es};
      if (p.links.parent >= 0) {
        b.wait(fromParent[i][g]);
        src = recvAt(r.begin * es);
      }
      for (int c = 0; c < p.links.numChildren; ++c) {
        b.send(p.links.children[static_cast<size_t>(c)], src, r.count * es);
      }
    }
  }
}

}  // namespace

// Tree 0 places rank r at position r + 1, so odd ranks are its interior
// nodes; tree 1 places rank r at position r (rank 0 at n), so its interior
// nodes are even ranks. No rank is interior in both.
TreeLinks doubleTreeLinks(int tree, int rank, int nranks) {
  return linksAt(rank, nranks, tree == 0 ? 0 : nranks - 1);
}

TreeLinks rootedTreeLinks(int root, int rank, int nranks) {
  const int rootPosition = largestPowerOfTwoAtMost(nranks);
  return linksAt(rank, nranks, mod(rootPosition - 1 - root, nranks));
}

Schedule treeAllReduce(const CollArgs& a) {
  Schedule s = newSchedule(a);
  ScheduleBuilder b(s);
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  if (a.count == 0) return s;
  const size_t half = (a.count + 1) / 2;
  std::array<TreePart, 2> parts;
  parts[0] = {doubleTreeLinks(0, a.rank, a.nranks), 0, half, 0};
  parts[1] = {doubleTreeLinks(1, a.rank, a.nranks), half, a.count - half, 0};
  const size_t as = accumulatorSize(a.type);
  const size_t sliceElems = sliceElements(a.chunkBytes, as, half);
  parts[1].scratch = reduceSlots(parts[0].links) * sliceElems * as;
  s.scratchBytes = parts[1].scratch + reduceSlots(parts[1].links) * sliceElems * as;
  TreeReducer(b, a, parts, sliceElems).emit();
  emitBroadcastDown(b, a, parts, sliceElems, BufferId::Recv);
  return s;
}

Schedule treeBroadcast(const CollArgs& a) {
  Schedule s = newSchedule(a);
  ScheduleBuilder b(s);
  const size_t es = dataTypeSize(a.type);
  if (a.rank == a.root && !a.inPlace) b.copy(recvAt(0), sendAt(0), a.count * es);
  if (a.nranks == 1 || a.count == 0) return s;
  const TreePart part{rootedTreeLinks(a.root, a.rank, a.nranks), 0, a.count, 0};
  emitBroadcastDown(b, a, {&part, 1}, sliceElements(a.chunkBytes, es, a.count), BufferId::Send);
  return s;
}

Schedule treeReduce(const CollArgs& a) {
  Schedule s = newSchedule(a);
  ScheduleBuilder b(s);
  if (a.nranks == 1) {
    b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
    return s;
  }
  if (a.count == 0) return s;
  const TreePart part{rootedTreeLinks(a.root, a.rank, a.nranks), 0, a.count, 0};
  const size_t as = accumulatorSize(a.type);
  const size_t sliceElems = sliceElements(a.chunkBytes, as, a.count);
  s.scratchBytes = reduceSlots(part.links) * sliceElems * as;
  TreeReducer(b, a, {&part, 1}, sliceElems).emit();
  return s;
}

}  // namespace hcl
