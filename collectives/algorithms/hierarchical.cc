// AllReduce, AllGather and ReduceScatter over the topology's levels.
#include "collectives/algorithms/hierarchical.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include "collectives/algorithms/hier_groups.h"
#include "collectives/algorithms/hier_steps.h"
#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

using hier::Chunk;
using hier::Emitter;
using hier::Level;
using hier::Placement;
using hier::Range;
using hier::Split;

Schedule startSchedule(const CollArgs& a) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = "hier";
  return s;
}

std::vector<int> everyRank(int nranks) {
  std::vector<int> ranks(static_cast<size_t>(nranks));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

size_t positionOf(const std::vector<int>& ranks, int rank) {
  return static_cast<size_t>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

std::vector<int> subList(const std::vector<int>& v, size_t from, size_t to) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to)};
}

// ---------------------------------------------------------------- AllReduce

// How many pieces the allreduce cuts the data into by the time it reaches
// the outermost ring: the shard owners of every level that splits, times
// that ring's size (nranks for equal groups). The same on every rank.
size_t piecesAtTheTop(const std::vector<Level>& levels, std::vector<int> ranks) {
  size_t pieces = 1;
  for (size_t level = 0;; ++level) {
    Split split;
    level = hier::nextSplittingLevel(levels, level, ranks, ranks[0], split);
    if (level == levels.size()) return pieces * ranks.size();
    pieces *= split.owners;
    ranks = hier::ranksAt(ranks, split.column(0));
  }
}

// An owner's share of a group's reduction: reduce-scatter among the owners,
// then fold in the extras' contributions to the owner's shard.
Placement reduceOwnShard(Emitter& e, const std::vector<int>& owners, const std::vector<int>& extras,
                         size_t myIndex, const std::vector<Chunk>& shards, const Placement& in) {
  const Chunk& mine = shards[myIndex];
  const Placement sum = e.takeAccumulators(mine);
  Placement partial = in;
  if (owners.size() > 1) {
    hier::ringReduceScatter(e, owners, myIndex, shards, in, sum);
    partial = sum;
  }
  return hier::addContributions(e, extras, mine, partial, sum);
}

void flatAllReduce(Emitter& e, const std::vector<int>& ranks, const Placement& in, Range range) {
  const Placement out = e.recvBuffer();
  if (ranks.size() == 1) {
    hier::convertChunk(e, out, in, {range});
    return;
  }
  const size_t me = positionOf(ranks, e.rank());
  const auto chunks = hier::balancedChunks(range, ranks.size());
  hier::ringReduceScatter(e, ranks, me, chunks, in, out);
  hier::ringAllGather(e, ranks, me, chunks, out);
}

void allReduceAsExtra(Emitter& e, const std::vector<int>& owners, const std::vector<Chunk>& shards,
                      const Placement& in) {
  std::vector<std::pair<int, Chunk>> parts;
  for (size_t j = 0; j < owners.size(); ++j) parts.emplace_back(owners[j], shards[j]);
  // Waits for the sends: in place, the results land where the data was.
  hier::sendAsAccumulators(e, parts, in);
  std::vector<uint32_t> recvs;
  for (size_t j = 0; j < owners.size(); ++j) {
    const auto posted = hier::recvChunk(e, owners[j], shards[j], e.recvBuffer());
    recvs.insert(recvs.end(), posted.begin(), posted.end());
  }
  e.b.waitAll(recvs);  // an inner level may forward them
}

// Allreduce of `range` among `ranks`, each holding its operand in `in`; the
// Native result ends in every member's receive buffer.
void allReduceAmong(Emitter& e, const std::vector<Level>& levels, size_t level, const std::vector<int>& ranks,
                    const Placement& in, Range range) {
  Split split;
  level = hier::nextSplittingLevel(levels, level, ranks, e.rank(), split);
  if (level == levels.size()) {
    flatAllReduce(e, ranks, in, range);
    return;
  }
  const std::vector<int> group = hier::ranksAt(ranks, split.mine());
  const std::vector<int> owners = subList(group, 0, split.owners);
  const std::vector<int> extras = subList(group, split.owners, group.size());
  const std::vector<Chunk> shards = hier::balancedChunks(range, split.owners);
  if (!split.isOwner()) {
    allReduceAsExtra(e, owners, shards, in);
    return;
  }
  const size_t mark = e.scratch.mark();
  const Chunk& mine = shards[split.myIndex];
  const Placement partial = reduceOwnShard(e, owners, extras, split.myIndex, shards, in);
  allReduceAmong(e, levels, level + 1, hier::ranksAt(ranks, split.column(split.myIndex)), partial, mine[0]);
  for (int extra : extras) hier::sendChunk(e, extra, mine, e.recvBuffer());
  hier::ringAllGather(e, owners, split.myIndex, shards, e.recvBuffer());
  e.scratch.release(mark);
}

// ------------------------------------------------ AllGather and ReduceScatter

// Ranks and the blocks (ranks' data) each one is responsible for.
struct Party {
  std::vector<int> ranks;
  std::vector<std::vector<int>> blocks;  // sorted, one list per rank
};

Party everyoneForOwnBlock(int nranks) {
  Party p{everyRank(nranks), {}};
  for (int r : p.ranks) p.blocks.push_back({r});
  return p;
}

// The blocks after every extra handed its own to its partner owner.
std::vector<std::vector<int>> foldedBlocks(const Party& p, const Split& split) {
  std::vector<std::vector<int>> blocks = p.blocks;
  for (const auto& group : split.groups) {
    for (size_t i = split.owners; i < group.size(); ++i) {
      std::vector<int>& into = blocks[group[split.partnerOf(i)]];
      into.insert(into.end(), p.blocks[group[i]].begin(), p.blocks[group[i]].end());
    }
  }
  for (auto& b : blocks) std::sort(b.begin(), b.end());
  return blocks;
}

Party columnParty(const Party& p, const Split& split, const std::vector<std::vector<int>>& folded, size_t j) {
  Party column;
  for (size_t pos : split.column(j)) {
    column.ranks.push_back(p.ranks[pos]);
    column.blocks.push_back(folded[pos]);
  }
  return column;
}

// Shard j of every group: the blocks column j is responsible for.
std::vector<std::vector<int>> shardBlocks(const Split& split, const std::vector<std::vector<int>>& folded) {
  std::vector<std::vector<int>> shards(split.owners);
  for (size_t j = 0; j < split.owners; ++j) {
    for (size_t pos : split.column(j)) shards[j].insert(shards[j].end(), folded[pos].begin(), folded[pos].end());
    std::sort(shards[j].begin(), shards[j].end());
  }
  return shards;
}

std::vector<int> without(const std::vector<int>& blocks, const std::vector<int>& excluded) {
  std::vector<int> kept;
  std::set_difference(blocks.begin(), blocks.end(), excluded.begin(), excluded.end(), std::back_inserter(kept));
  return kept;
}

// The same element range `within` of every listed block.
Chunk piecesOf(const std::vector<int>& blocks, Range within, size_t count) {
  Chunk c;
  for (int b : blocks) c.push_back({static_cast<size_t>(b) * count + within.begin, within.len});
  return c;
}

std::vector<Chunk> piecesOfEach(const std::vector<std::vector<int>>& blockLists, Range within, size_t count) {
  std::vector<Chunk> chunks;
  for (const auto& blocks : blockLists) chunks.push_back(piecesOf(blocks, within, count));
  return chunks;
}

// Every member of `party` gets (range `within` of) every block the party is
// responsible for, in its receive buffer, where its own blocks already are.
void allGatherAmong(Emitter& e, const std::vector<Level>& levels, size_t level, const Party& party,
                    Range within) {
  const size_t count = e.args.count;
  const Placement buf = e.recvBuffer();
  const size_t me = positionOf(party.ranks, e.rank());
  Split split;
  level = hier::nextSplittingLevel(levels, level, party.ranks, e.rank(), split);
  if (level == levels.size()) {
    hier::ringAllGather(e, party.ranks, me, piecesOfEach(party.blocks, within, count), buf);
    return;
  }
  const auto folded = foldedBlocks(party, split);
  const auto shards = shardBlocks(split, folded);
  const std::vector<int> group = hier::ranksAt(party.ranks, split.mine());
  const std::vector<int> owners = subList(group, 0, split.owners);
  const auto& myBlocks = party.blocks[me];
  if (!split.isOwner()) {
    hier::sendChunk(e, owners[split.partnerOf(split.myIndex)], piecesOf(myBlocks, within, count), buf);
    std::vector<uint32_t> recvs;
    for (size_t j = 0; j < owners.size(); ++j) {
      const auto posted = hier::recvChunk(e, owners[j], piecesOf(without(shards[j], myBlocks), within, count), buf);
      recvs.insert(recvs.end(), posted.begin(), posted.end());
    }
    e.b.waitAll(recvs);  // an inner level may forward them
    return;
  }
  const auto& positions = split.mine();
  std::vector<uint32_t> recvs;
  for (size_t i = split.owners; i < positions.size(); ++i) {
    if (split.partnerOf(i) != split.myIndex) continue;
    const auto posted = hier::recvChunk(e, group[i], piecesOf(party.blocks[positions[i]], within, count), buf);
    recvs.insert(recvs.end(), posted.begin(), posted.end());
  }
  e.b.waitAll(recvs);
  allGatherAmong(e, levels, level + 1, columnParty(party, split, folded, split.myIndex), within);
  for (size_t i = split.owners; i < positions.size(); ++i) {
    const auto theirs = without(shards[split.myIndex], party.blocks[positions[i]]);
    hier::sendChunk(e, group[i], piecesOf(theirs, within, count), buf);
  }
  hier::ringAllGather(e, owners, split.myIndex, piecesOfEach(shards, within, count), buf);
}

// Every member of `party` ends with (range `within` of) the reduced blocks it
// is responsible for, written through `finals` (Native); `in` holds its
// operand for every block of the party. `finals` gains scratch slots for
// the blocks passed through this rank on their way to their owner.
void reduceScatterAmong(Emitter& e, const std::vector<Level>& levels, size_t level, const Party& party,
                        const Placement& in, Range within, Placement& finals) {
  const size_t count = e.args.count;
  const size_t me = positionOf(party.ranks, e.rank());
  Split split;
  level = hier::nextSplittingLevel(levels, level, party.ranks, e.rank(), split);
  if (level == levels.size()) {
    hier::ringReduceScatter(e, party.ranks, me, piecesOfEach(party.blocks, within, count), in, finals);
    return;
  }
  const auto folded = foldedBlocks(party, split);
  const std::vector<Chunk> shards = piecesOfEach(shardBlocks(split, folded), within, count);
  const std::vector<int> group = hier::ranksAt(party.ranks, split.mine());
  const std::vector<int> owners = subList(group, 0, split.owners);
  const std::vector<int> extras = subList(group, split.owners, group.size());
  if (!split.isOwner()) {
    std::vector<std::pair<int, Chunk>> parts;
    for (size_t j = 0; j < owners.size(); ++j) parts.emplace_back(owners[j], shards[j]);
    hier::sendAsAccumulators(e, parts, in);  // waits: in place, our result lands in our input
    const int partner = owners[split.partnerOf(split.myIndex)];
    e.b.waitAll(hier::recvChunk(e, partner, piecesOf(party.blocks[me], within, count), finals));
    return;
  }
  const size_t mark = e.scratch.mark();
  const Placement partial = reduceOwnShard(e, owners, extras, split.myIndex, shards, in);
  // Results for my partnered extras come back to me first.
  const auto& positions = split.mine();
  std::vector<std::pair<int, Chunk>> forwarded;
  for (size_t i = split.owners; i < positions.size(); ++i) {
    if (split.partnerOf(i) != split.myIndex) continue;
    forwarded.emplace_back(group[i], piecesOf(party.blocks[positions[i]], within, count));
    for (const Range& r : forwarded.back().second) finals.add(r, scratchAt(e.scratch.take(r.len * e.nativeBytes)));
  }
  reduceScatterAmong(e, levels, level + 1, columnParty(party, split, folded, split.myIndex), partial, within,
                     finals);
  std::vector<uint32_t> sends;
  for (const auto& [extra, chunk] : forwarded) {
    const auto posted = hier::sendChunk(e, extra, chunk, finals);
    sends.insert(sends.end(), posted.begin(), posted.end());
  }
  e.b.waitAll(sends);  // their slots are given back now
  e.scratch.release(mark);
}

}  // namespace

Schedule hierAllReduce(const CollArgs& a) {
  Schedule s = startSchedule(a);
  if (a.count == 0) return s;
  Emitter e(a, s);
  const auto levels = hier::usableLevels(a);
  const auto everyone = everyRank(a.nranks);
  // A segment gives each member of the outermost ring about one slice.
  const size_t pieces = piecesAtTheTop(levels, everyone);
  const size_t segment = e.reduceSlice > a.count / pieces ? a.count : e.reduceSlice * pieces;
  for (size_t lo = 0; lo < a.count; lo += segment)
    allReduceAmong(e, levels, 0, everyone, e.sendBuffer(), {lo, std::min(segment, a.count - lo)});
  s.scratchBytes = e.scratch.peak();
  return s;
}

Schedule hierAllGather(const CollArgs& a) {
  Schedule s = startSchedule(a);
  Emitter e(a, s);
  e.b.copy(recvAt(static_cast<size_t>(a.rank) * a.count * e.nativeBytes), sendAt(0), a.count * e.nativeBytes);
  const auto levels = hier::usableLevels(a);
  const Party everyone = everyoneForOwnBlock(a.nranks);
  for (size_t lo = 0; lo < a.count; lo += e.moveSlice)
    allGatherAmong(e, levels, 0, everyone, {lo, std::min(e.moveSlice, a.count - lo)});
  return s;
}

Schedule hierReduceScatter(const CollArgs& a) {
  Schedule s = startSchedule(a);
  Emitter e(a, s);
  const auto levels = hier::usableLevels(a);
  const Party everyone = everyoneForOwnBlock(a.nranks);
  for (size_t lo = 0; lo < a.count; lo += e.reduceSlice) {
    Placement finals(Form::Native, e.nativeBytes);
    finals.add({static_cast<size_t>(a.rank) * a.count, a.count}, recvAt(0));
    reduceScatterAmong(e, levels, 0, everyone, e.sendBuffer(), {lo, std::min(e.reduceSlice, a.count - lo)},
                       finals);
  }
  s.scratchBytes = e.scratch.peak();
  return s;
}

}  // namespace hcl
