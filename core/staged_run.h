// The host-staged path: a collective on device buffers runs as a pipeline of
// chunks. While chunk k crosses the network (a host collective on pinned
// bounce buffers), chunk k+1 is copied device -> host and chunk k-1 host ->
// device on the device's copy engines, so a transfer takes about as long as
// its slowest stage. Every rank of a communicator that holds any GPU rank
// runs collectives this way, so the chunks line up across ranks; ranks whose
// buffers are host memory skip the copies where they can.
#pragma once

#include <memory>
#include <vector>

#include "collectives/plan/collective.h"
#include "core/executor.h"
#include "core/staged_layout.h"
#include "core/staging.h"

namespace hcl {

class StagedRun final : public OpRun {
 public:
  // `base` describes the whole call; chunks copy it with their own count.
  StagedRun(Communicator& comm, StagingArea& area, CollArgs base, const void* send, void* recv, ReduceSpec spec);
  Status advance(bool* done, bool* progressed) override;
  int waitingOn() const override { return net_ ? net_->waitingOn() : -1; }

 private:
  size_t chunkElems(size_t k) const;
  Status stageIn(size_t k);     // issue chunk k's device -> host copy
  Status startNet(size_t k);    // start chunk k's host collective
  Status stageOut(size_t k);    // issue chunk k's host -> device copy
  Status slotFree(size_t k, bool* free);  // is chunk k's slot done with chunk k - slots?
  std::byte* inPtr(size_t k) const;
  std::byte* outPtr(size_t k) const;

  Communicator& comm_;
  StagingArea& area_;
  CollArgs base_;
  const std::byte* send_;
  std::byte* recv_;
  ReduceSpec spec_;
  StageLayout layout_;
  size_t elem_;
  size_t width_;
  size_t chunks_;
  bool copyIn_, copyOut_, shareSlot_;
  std::vector<uint64_t> inTicket_, outTicket_;  // 0: nothing to wait for
  size_t nextIn_ = 0, nextNet_ = 0;
  std::unique_ptr<ScheduleRun> net_;
};

// Point-to-point calls whose buffers are device memory: sends are copied to
// pinned memory first, receives land there and are copied back at the end.
class StagedP2PRun final : public OpRun {
 public:
  struct Call {
    void* user;       // the caller's buffer
    std::byte* host;  // its pinned stand-in
    size_t bytes;
    bool isSend;
  };
  StagedP2PRun(StagingArea& area, std::vector<Call> calls, std::unique_ptr<ScheduleRun> inner);
  // Copies the sends' data in; call before advancing.
  Status begin();
  Status advance(bool* done, bool* progressed) override;
  int waitingOn() const override { return inner_->waitingOn(); }

 private:
  StagingArea& area_;
  std::vector<Call> calls_;
  std::unique_ptr<ScheduleRun> inner_;
};

}  // namespace hcl
