#include "core/staged_run.h"

#include <algorithm>

namespace hcl {

StagedRun::StagedRun(Communicator& comm, StagingArea& area, CollArgs base, const void* send, void* recv,
                     ReduceSpec spec)
    : comm_(comm),
      area_(area),
      base_(base),
      send_(static_cast<const std::byte*>(send)),
      recv_(static_cast<std::byte*>(recv)),
      spec_(spec),
      layout_(stageLayout(base.kind, base.rank, base.nranks, base.root)),
      elem_(dataTypeSize(base.type)),
      width_(stageChunkWidth(layout_, elem_, area.slotBytes())),
      chunks_(stageChunkCount(base.count, width_)) {
  Device& dev = comm.device();
  // Host memory in one row is used in place; anything else goes through a slot.
  copyIn_ = layout_.readsInput && (layout_.inBlocks > 1 || dev.isDeviceMemory(send));
  copyOut_ = layout_.writesOutput && (layout_.outBlocks > 1 || dev.isDeviceMemory(recv));
  // An in-place call on staged memory keeps one copy of the data, in the out slot.
  shareSlot_ = send == recv && copyIn_ && copyOut_ && layout_.inBlocks == layout_.outBlocks;
  inTicket_.assign(chunks_, 0);
  outTicket_.assign(chunks_, 0);
}

size_t StagedRun::chunkElems(size_t k) const { return std::min(width_, base_.count - k * width_); }

std::byte* StagedRun::inPtr(size_t k) const {
  const int slot = static_cast<int>(k % static_cast<size_t>(area_.slots()));
  if (shareSlot_) return area_.out(slot);
  if (copyIn_ || !layout_.readsInput) return area_.in(slot);
  return const_cast<std::byte*>(send_) + k * width_ * elem_;
}

std::byte* StagedRun::outPtr(size_t k) const {
  const int slot = static_cast<int>(k % static_cast<size_t>(area_.slots()));
  if (copyOut_ || !layout_.writesOutput) return area_.out(slot);
  return recv_ + k * width_ * elem_;
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
  if (outTicket_[prev]) HCL_TRY(area_.toDevice().poll(outTicket_[prev], free));
  return {};
}

Status StagedRun::stageIn(size_t k) {
  if (!copyIn_) return {};
  const size_t w = chunkElems(k) * elem_;
  HCL_TRY(area_.toHost().copy2D(inPtr(k), w, send_ + k * width_ * elem_, base_.count * elem_, w, layout_.inBlocks));
  return area_.toHost().mark(&inTicket_[k]);
}

Status StagedRun::startNet(size_t k) {
  CollArgs args = base_;
  args.count = chunkElems(k);
  std::byte* in = inPtr(k);
  std::byte* out = outPtr(k);
  args.inPlace = in == out;
  // Every chunk but the last has the full width and the same in-place-ness,
  // so the communicator's schedule cache plans it once.
  net_ = std::make_unique<ScheduleRun>(comm_, comm_.schedule(args), RunBuffers{in, out, {}}, spec_);
  return {};
}

Status StagedRun::stageOut(size_t k) {
  if (!copyOut_) return {};
  const size_t w = chunkElems(k) * elem_;
  HCL_TRY(area_.toDevice().copy2D(recv_ + k * width_ * elem_, base_.count * elem_, outPtr(k), w, w, layout_.outBlocks));
  return area_.toDevice().mark(&outTicket_[k]);
}

Status StagedRun::advance(bool* done, bool* progressed) {
  *done = false;
  const size_t slots = static_cast<size_t>(area_.slots());
  while (true) {
    bool moved = false;
    // Copy in ahead of the network, as far as free slots allow.
    while (nextIn_ < chunks_ && nextIn_ < nextNet_ + slots) {
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
      if (inTicket_[nextNet_]) HCL_TRY(area_.toHost().poll(inTicket_[nextNet_], &ready));
      if (ready) {
        HCL_TRY(startNet(nextNet_));
        moved = true;
      }
    } else if (nextNet_ == chunks_) {
      // Done once the last copy back has landed (they complete in order).
      bool landed = true;
      if (chunks_ > 0 && outTicket_[chunks_ - 1]) HCL_TRY(area_.toDevice().poll(outTicket_[chunks_ - 1], &landed));
      *done = landed;
      if (landed) *progressed = true;
      return {};
    }
    if (!moved) break;
    *progressed = true;
  }
  return {};
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
