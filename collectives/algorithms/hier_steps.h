// Building blocks of the hierarchical schedules: rings and point-to-point
// exchanges over an explicit list of ranks, on data addressed by "logical
// element" (the element index in the collective's whole vector: the
// allreduce vector, or rank b's block at b * count for allgather and
// reduce-scatter) wherever each piece of it currently lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl::hier {

// Logical elements [begin, begin + len).
struct Range {
  size_t begin = 0, len = 0;
};

// What one rank is responsible for in a ring: one or more ranges.
using Chunk = std::vector<Range>;

size_t totalLength(const Chunk& chunk);

// `parts` balanced ranges covering `whole`, each as a one-range chunk.
std::vector<Chunk> balancedChunks(Range whole, size_t parts);

// Where logical elements live and in which form: spans of elements, each
// stored contiguously from a buffer position. A message or reduction never
// crosses a span.
class Placement {
 public:
  Placement(Form form, size_t elemBytes) : form_(form), elemBytes_(elemBytes) {}
  // Element e at base + e * elemBytes (a user buffer).
  static Placement linear(BufferRef base, Form form, size_t elemBytes);
  // The pieces of `chunk`, one after another from scratch offset `offset`.
  static Placement packed(const Chunk& chunk, size_t offset, Form form, size_t elemBytes);

  void add(Range range, BufferRef base) {
    if (range.len > 0) spans_[range.begin] = {range.len, base};
  }
  BufferRef at(size_t elem) const;
  Form form() const { return form_; }
  size_t elemBytes() const { return elemBytes_; }

 private:
  struct Span {
    size_t len;
    BufferRef base;
  };
  Form form_;
  size_t elemBytes_;
  std::map<size_t, Span> spans_;  // by first element
};

// Scratch handed out as a stack: a phase takes what it needs and gives it
// back when it returns, after waiting for every send that reads it.
class ScratchArena {
 public:
  size_t take(size_t bytes);
  size_t mark() const { return top_; }
  void release(size_t mark) { top_ = mark; }
  size_t peak() const { return peak_; }

 private:
  size_t top_ = 0, peak_ = 0;
};

// Everything a generator threads through: the call, the builder, sizes.
struct Emitter {
  Emitter(const CollArgs& args, Schedule& schedule);
  const CollArgs& args;
  ScheduleBuilder b;
  size_t nativeBytes, accBytes;
  size_t reduceSlice;  // elements per pipeline slice of a reduction
  size_t moveSlice;    // elements per slice of pure data movement
  ScratchArena scratch;

  int rank() const { return args.rank; }
  Placement sendBuffer() const { return Placement::linear(sendAt(0), Form::Native, nativeBytes); }
  Placement recvBuffer() const { return Placement::linear(recvAt(0), Form::Native, nativeBytes); }
  // Partials of `chunk`, packed in scratch taken now.
  Placement takeAccumulators(const Chunk& chunk);
};

// One message per non-empty range, `elemBytes` of the placement per element.
std::vector<uint32_t> sendChunk(Emitter& e, int peer, const Chunk& chunk, const Placement& from);
std::vector<uint32_t> recvChunk(Emitter& e, int peer, const Chunk& chunk, const Placement& into);

// dst = src over `chunk`, converting forms (a single rank's reduction).
void convertChunk(Emitter& e, const Placement& dst, const Placement& src, const Chunk& chunk);

// Reduce-scatter around `ring` (the caller at position `me`): afterwards the
// caller's chunk, combined over the ring, is written through `out`, in out's
// form. `in` is each member's own operand (Native user data or Acc
// partials); partials travel as Acc. Pipelined in reduceSlice pieces.
void ringReduceScatter(Emitter& e, const std::vector<int>& ring, size_t me, const std::vector<Chunk>& chunks,
                       const Placement& in, const Placement& out);

// All-gather around `ring` on `buf`, which already holds the caller's chunk.
void ringAllGather(Emitter& e, const std::vector<int>& ring, size_t me, const std::vector<Chunk>& chunks,
                   const Placement& buf);

// Sends each peer its chunk of `in` as Acc (staging through scratch when
// loading a Native operand changes it) and waits for the sends.
void sendAsAccumulators(Emitter& e, const std::vector<std::pair<int, Chunk>>& parts, const Placement& in);

// Receives `chunk` (Acc) from each of `contributors` in turn and adds it to
// `acc`; the sum goes to `sum` (Acc). Returns the placement now holding the
// running value: `sum`, or `acc` when there was nobody to add.
Placement addContributions(Emitter& e, const std::vector<int>& contributors, const Chunk& chunk,
                           const Placement& acc, const Placement& sum);

}  // namespace hcl::hier
