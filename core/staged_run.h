// The host-staged path: a collective on device buffers runs as a pipeline of
// chunks. While chunk k crosses the network (a host collective on pinned
// bounce buffers), chunk k+1 is copied device -> host and chunk k-1 host ->
// device, so a transfer takes about as long as its slowest stage. Every rank
// of a communicator that holds any GPU rank runs collectives this way, so the
// chunks line up across ranks; ranks whose buffers are host memory skip the
// copies where they can.
//
// StagedRun copies on the staging area's own copy queues (calls without a
// stream). GatedStagedRun is the same pipeline for a call on a device
// runtime's stream: its copies to and from device memory were put on that
// stream when the call was made (stageOnStream); the worker runs each
// chunk's host collective, and its copies between host buffers and slots.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "collectives/plan/collective.h"
#include "core/executor.h"
#include "core/staged_layout.h"
#include "core/staging.h"

namespace hcl {

// Where each chunk of a staged call lives, and its copies.
class StagedChunks {
 public:
  // `base` describes the whole call; chunks copy it with their own count.
  StagedChunks(Device& device, StagingArea& area, const CollArgs& base, const void* send, void* recv);
  struct Copy {
    void* dst;
    size_t dstPitch;
    const void* src;
    size_t srcPitch;
    size_t width;
    size_t height;
  };
  size_t count() const { return chunks_; }
  int slots() const { return area_.slots(); }
  bool copiesIn() const { return copyIn_; }
  bool copiesOut() const { return copyOut_; }
  // The copy stays in host memory (a host buffer with several blocks).
  bool hostIn() const { return hostIn_; }
  bool hostOut() const { return hostOut_; }
  Copy copyIn(size_t k) const;   // buffer -> slot, when copiesIn()
  Copy copyOut(size_t k) const;  // slot -> buffer, when copiesOut()
  CopyQueue& hostCopies() const { return area_.hostCopies(); }  // for copies that stay in host memory
  CollArgs chunkArgs(size_t k) const;
  RunBuffers chunkBuffers(size_t k) const;

 private:
  size_t chunkElems(size_t k) const;
  std::byte* inPtr(size_t k) const;
  std::byte* outPtr(size_t k) const;

  StagingArea& area_;
  CollArgs base_;
  const std::byte* send_;
  std::byte* recv_;
  StageLayout layout_;
  size_t elem_;
  size_t width_;
  size_t chunks_;
  bool copyIn_, copyOut_, shareSlot_, hostIn_, hostOut_;
};

class StagedRun final : public OpRun {
 public:
  StagedRun(Communicator& comm, StagingArea& area, CollArgs base, const void* send, void* recv, ReduceSpec spec,
            uint32_t tagSalt);
  Status advance(bool* done, bool* progressed) override;
  int waitingOn() const override { return net_ ? net_->waitingOn() : -1; }

 private:
  Status stageIn(size_t k);     // issue chunk k's device -> host copy
  Status startNet(size_t k);    // start chunk k's host collective
  Status stageOut(size_t k);    // issue chunk k's host -> device copy
  Status slotFree(size_t k, bool* free);  // is chunk k's slot done with chunk k - slots?

  Communicator& comm_;
  StagingArea& area_;
  ReduceSpec spec_;
  uint32_t tagSalt_;  // every chunk's collective is part of one call
  StagedChunks chunks_;
  CopyQueue& inQueue_;   // the copies in, and their tickets
  CopyQueue& outQueue_;  // the copies out
  std::vector<uint64_t> inTicket_, outTicket_;  // 0: nothing to wait for
  size_t nextIn_ = 0, nextNet_ = 0;
  std::unique_ptr<ScheduleRun> net_;
};

// Tickets that a call's stream side (the caller's thread) issues while HCL's
// worker may already run the call: the worker reads only those published.
class StreamTickets {
 public:
  // Before the first publish: room for `n` tickets, never moved after.
  void reserve(size_t n) {
    list_ = std::make_unique<uint64_t[]>(n);
    capacity_ = n;
  }
  void publish(uint64_t ticket) {
    const size_t i = issued_.load(std::memory_order_relaxed);
    if (i >= capacity_) {
      fail({hclInternalError, "stream staging issued more tickets than it reserved"});
      return;
    }
    list_[i] = ticket;
    issued_.store(i + 1, std::memory_order_release);
  }
  // The first failure stands: once published, the worker may be reading it.
  void fail(Status why) {
    if (failing_.exchange(true, std::memory_order_acq_rel)) return;
    failure_ = std::move(why);
    failed_.store(true, std::memory_order_release);
  }
  // Worker: ticket i once published (*ready), or the stream side's failure.
  Status get(size_t i, uint64_t* ticket, bool* ready) const {
    *ready = i < issued_.load(std::memory_order_acquire);
    if (*ready) *ticket = list_[i];
    else if (failed_.load(std::memory_order_acquire)) return failure_;
    return {};
  }
  // Worker: blocks until ticket i is published (or the stream side failed).
  Status waitPublished(size_t i, uint64_t* ticket) const;
  // The caller's thread, which publishes: ticket i, and the last one (0: none).
  uint64_t at(size_t i) const { return list_[i]; }
  uint64_t last() const {
    const size_t n = issued_.load(std::memory_order_relaxed);
    return n ? list_[n - 1] : 0;
  }

 private:
  std::unique_ptr<uint64_t[]> list_;
  size_t capacity_ = 0;
  std::atomic<size_t> issued_{0};
  std::atomic<bool> failing_{false};
  std::atomic<bool> failed_{false};
  Status failure_;
};

// A staged call on a gated stream: its chunks, the gate, and one ticket per
// chunk.
struct GatedStaging {
  StreamGate* gate = nullptr;  // set before the first ticket is published
  std::unique_ptr<StagedChunks> chunks;
  StreamTickets tickets;
};

// The stream's side of a staged call on a gated stream, put there when the
// call is made: per chunk, the copy in and a mark (the worker may start the
// chunk), then, once the worker releases the chunk's ticket, the copy out.
// The copy in of chunk k follows the copy out of chunk k - slots on the
// stream, which keeps each slot's chunks apart. Publishes each chunk's
// ticket as it goes; a failure part way is recorded in the tickets.
void stageOnStream(GatedStaging& g);

class GatedStagedRun final : public OpRun {
 public:
  GatedStagedRun(Communicator& comm, std::shared_ptr<GatedStaging> staging, ReduceSpec spec, uint32_t tagSalt);
  Status advance(bool* done, bool* progressed) override;
  int waitingOn() const override { return net_ ? net_->waitingOn() : -1; }

 private:
  Communicator& comm_;
  std::shared_ptr<GatedStaging> g_;
  ReduceSpec spec_;
  uint32_t tagSalt_;
  size_t next_ = 0;
  uint64_t current_ = 0;  // chunk next_'s ticket
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
