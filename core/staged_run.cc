#include "core/staged_run.h"

#include <algorithm>

#include "core/deadline.h"

namespace hcl {

StagedChunks::StagedChunks(Device& device, StagingArea& area, const CollArgs& base, const void* send, void* recv)
    : area_(area),
      base_(base),
      send_(static_cast<const std::byte*>(send)),
      recv_(static_cast<std::byte*>(recv)),
      layout_(stageLayout(base.kind, base.rank, base.nranks, base.root)),
      elem_(dataTypeSize(base.type)),
      width_(stageChunkWidth(layout_, elem_, area.slotBytes())),
      chunks_(stageChunkCount(base.count, width_)) {
  hostIn_ = !device.isDeviceMemory(send);
  hostOut_ = !device.isDeviceMemory(recv);
  // Host memory in one row is used in place; anything else goes through a slot.
  copyIn_ = layout_.readsInput && (layout_.inBlocks > 1 || !hostIn_);
  copyOut_ = layout_.writesOutput && (layout_.outBlocks > 1 || !hostOut_);
  // An in-place call on staged memory keeps one copy of the data, in the out slot.
  shareSlot_ = send == recv && copyIn_ && copyOut_ && layout_.inBlocks == layout_.outBlocks;
}

size_t StagedChunks::chunkElems(size_t k) const { return std::min(width_, base_.count - k * width_); }

std::byte* StagedChunks::inPtr(size_t k) const {
  const int slot = static_cast<int>(k % static_cast<size_t>(area_.slots()));
  if (shareSlot_) return area_.out(slot);
  if (copyIn_ || !layout_.readsInput) return area_.in(slot);
  return const_cast<std::byte*>(send_) + k * width_ * elem_;
}

std::byte* StagedChunks::outPtr(size_t k) const {
  const int slot = static_cast<int>(k % static_cast<size_t>(area_.slots()));
  if (copyOut_ || !layout_.writesOutput) return area_.out(slot);
  return recv_ + k * width_ * elem_;
}

StagedChunks::Copy StagedChunks::copyIn(size_t k) const {
  const size_t w = chunkElems(k) * elem_;
  return {inPtr(k), w, send_ + k * width_ * elem_, base_.count * elem_, w, layout_.inBlocks};
}

StagedChunks::Copy StagedChunks::copyOut(size_t k) const {
  const size_t w = chunkElems(k) * elem_;
  return {recv_ + k * width_ * elem_, base_.count * elem_, outPtr(k), w, w, layout_.outBlocks};
}

CollArgs StagedChunks::chunkArgs(size_t k) const {
  CollArgs args = base_;
  args.count = chunkElems(k);
  // Every chunk but the last has the full width and the same in-place-ness,
  // so the communicator's schedule cache plans it once.
  args.inPlace = inPtr(k) == outPtr(k);
  return args;
}

RunBuffers StagedChunks::chunkBuffers(size_t k) const { return RunBuffers{inPtr(k), outPtr(k), {}}; }

StagedRun::StagedRun(Communicator& comm, StagingArea& area, CollArgs base, const void* send, void* recv,
                     ReduceSpec spec, uint32_t tagSalt)
    : comm_(comm),
      area_(area),
      spec_(spec),
      tagSalt_(tagSalt),
      chunks_(comm.device(), area, base, send, recv),
      inQueue_(chunks_.hostIn() ? area.hostCopies() : area.toHost()),
      outQueue_(chunks_.hostOut() ? area.hostCopies() : area.toDevice()) {
  inTicket_.assign(chunks_.count(), 0);
  outTicket_.assign(chunks_.count(), 0);
}

Status StagedRun::slotFree(size_t k, bool* free) {
  const size_t slots = static_cast<size_t>(area_.slots());
  *free = true;
  if (k < slots) return {};
  const size_t prev = k - slots;
  if (prev >= nextNet_) {  // its host collective has not finished
    *free = false;
    return {};
  }
  if (outTicket_[prev]) HCL_TRY(outQueue_.poll(outTicket_[prev], free));
  return {};
}

Status StagedRun::stageIn(size_t k) {
  if (!chunks_.copiesIn()) return {};
  const StagedChunks::Copy c = chunks_.copyIn(k);
  HCL_TRY(inQueue_.copy2D(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.height));
  return inQueue_.mark(&inTicket_[k]);
}

Status StagedRun::startNet(size_t k) {
  net_ = std::make_unique<ScheduleRun>(comm_, comm_.schedule(chunks_.chunkArgs(k)), chunks_.chunkBuffers(k), spec_,
                                       tagSalt_);
  return {};
}

Status StagedRun::stageOut(size_t k) {
  if (!chunks_.copiesOut()) return {};
  const StagedChunks::Copy c = chunks_.copyOut(k);
  HCL_TRY(outQueue_.copy2D(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.height));
  return outQueue_.mark(&outTicket_[k]);
}

Status StagedRun::advance(bool* done, bool* progressed) {
  *done = false;
  const size_t slots = static_cast<size_t>(area_.slots());
  const size_t count = chunks_.count();
  while (true) {
    bool moved = false;
    // Copy in ahead of the network, as far as free slots allow.
    while (nextIn_ < count && nextIn_ < nextNet_ + slots) {
      bool free = false;
      HCL_TRY(slotFree(nextIn_, &free));
      if (!free) break;
      HCL_TRY(stageIn(nextIn_++));
      *progressed = true;
    }
    if (net_) {
      bool netDone = false;
      HCL_TRY(net_->advance(&netDone, progressed));
      if (!netDone) return {};
      net_.reset();
      HCL_TRY(stageOut(nextNet_++));
      moved = true;
    } else if (nextNet_ < nextIn_) {
      bool ready = true;
      if (inTicket_[nextNet_]) HCL_TRY(inQueue_.poll(inTicket_[nextNet_], &ready));
      if (ready) {
        HCL_TRY(startNet(nextNet_));
        moved = true;
      }
    } else if (nextNet_ == count) {
      // Done once the last copy back has landed (they complete in order).
      bool landed = true;
      if (count > 0 && outTicket_[count - 1]) HCL_TRY(outQueue_.poll(outTicket_[count - 1], &landed));
      *done = landed;
      if (landed) *progressed = true;
      return {};
    }
    if (!moved) break;
    *progressed = true;
  }
  return {};
}

Status StreamTickets::waitPublished(size_t i, uint64_t* ticket) const {
  bool published = false;
  Backoff backoff;
  while (true) {
    HCL_TRY(get(i, ticket, &published));
    if (published) return {};
    backoff.pause();
  }
}

namespace {

// A device runtime copies host memory to host memory at once, whatever its
// stream holds before the copy: such copies are the worker's, in order.
bool streamCopiesIn(const StagedChunks& chunks) { return chunks.copiesIn() && !chunks.hostIn(); }
bool streamCopiesOut(const StagedChunks& chunks) { return chunks.copiesOut() && !chunks.hostOut(); }

Status copyOnWorker(const StagedChunks& chunks, const StagedChunks::Copy& c) {
  CopyQueue& queue = chunks.hostCopies();
  HCL_TRY(queue.copy2D(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.height));
  return queue.drain();
}

Status issueOnStream(GatedStaging& g) {
  StreamGate& gate = *g.gate;
  const StagedChunks& chunks = *g.chunks;
  const size_t count = chunks.count();
  const size_t slots = static_cast<size_t>(chunks.slots());
  auto copyOut = [&](size_t k) -> Status {
    HCL_TRY(gate.waitFor(g.tickets.at(k)));
    if (!streamCopiesOut(chunks)) return {};
    const StagedChunks::Copy c = chunks.copyOut(k);
    return gate.copyOnStream(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.height);
  };
  for (size_t k = 0; k < count; ++k) {
    if (k >= slots) HCL_TRY(copyOut(k - slots));
    if (streamCopiesIn(chunks)) {
      const StagedChunks::Copy c = chunks.copyIn(k);
      HCL_TRY(gate.copyOnStream(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.height));
    }
    uint64_t t = 0;
    HCL_TRY(gate.mark(&t));
    g.tickets.publish(t);
  }
  for (size_t k = count > slots ? count - slots : 0; k < count; ++k) HCL_TRY(copyOut(k));
  return {};
}

}  // namespace

void stageOnStream(GatedStaging& g) {
  g.tickets.reserve(g.chunks->count());
  if (Status s = issueOnStream(g); !s.ok()) g.tickets.fail(s.withContext("staging on the stream"));
}

GatedStagedRun::GatedStagedRun(Communicator& comm, std::shared_ptr<GatedStaging> staging, ReduceSpec spec,
                               uint32_t tagSalt)
    : comm_(comm), g_(std::move(staging)), spec_(spec), tagSalt_(tagSalt) {}

Status GatedStagedRun::advance(bool* done, bool* progressed) {
  *done = false;
  while (true) {
    if (net_) {
      bool netDone = false;
      HCL_TRY(net_->advance(&netDone, progressed));
      if (!netDone) return {};
      net_.reset();
      const StagedChunks& chunks = *g_->chunks;
      if (chunks.copiesOut() && !streamCopiesOut(chunks)) HCL_TRY(copyOnWorker(chunks, chunks.copyOut(next_)));
      g_->gate->release(current_);  // the stream copies this chunk out, or goes on
      ++next_;
      *progressed = true;
      continue;
    }
    if (next_ == g_->chunks->count()) {
      *done = true;
      return {};
    }
    bool published = false;
    HCL_TRY(g_->tickets.get(next_, &current_, &published));
    if (!published) return {};
    bool ready = false;
    HCL_TRY(g_->gate->pollStart(current_, &ready));
    if (!ready) return {};
    // The stream has run what came before this chunk, the caller's writes
    // to a host input included.
    const StagedChunks& chunks = *g_->chunks;
    if (chunks.copiesIn() && !streamCopiesIn(chunks)) HCL_TRY(copyOnWorker(chunks, chunks.copyIn(next_)));
    net_ = std::make_unique<ScheduleRun>(comm_, comm_.schedule(g_->chunks->chunkArgs(next_)),
                                         g_->chunks->chunkBuffers(next_), spec_, tagSalt_);
    *progressed = true;
  }
}

StagedP2PRun::StagedP2PRun(StagingArea& area, std::vector<Call> calls, std::unique_ptr<ScheduleRun> inner)
    : area_(area), calls_(std::move(calls)), inner_(std::move(inner)) {}

Status StagedP2PRun::begin() {
  for (const Call& c : calls_) {
    if (c.isSend) HCL_TRY(area_.toHost().copy(c.host, c.user, c.bytes));
  }
  return area_.toHost().drain();
}

Status StagedP2PRun::advance(bool* done, bool* progressed) {
  *done = false;
  bool innerDone = false;
  HCL_TRY(inner_->advance(&innerDone, progressed));
  if (!innerDone) return {};
  for (const Call& c : calls_) {
    if (!c.isSend) HCL_TRY(area_.toDevice().copy(c.user, c.host, c.bytes));
  }
  HCL_TRY(area_.toDevice().drain());
  *done = true;
  return {};
}

}  // namespace hcl
