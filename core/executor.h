// The progress layer: runs schedules over a communicator's connections
// without blocking, so one thread can drive many operations (and many
// communicators) at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/plan/schedule.h"
#include "core/communicator.h"
#include "core/function_ref.h"
#include "core/issue_order.h"
#include "core/schedule_cache.h"
#include "core/staging_choice.h"

namespace hcl {

// One rank's entry of a run's Addresses table: how peers reach its buffers.
struct AddressEntry {
  PeerBuffer send, recv, scratch;
  uint64_t flags = 0;  // kProposeStaging
};
static_assert(sizeof(AddressEntry) == kAddressEntryBytes);
static_assert(offsetof(AddressEntry, send) == kAddressSendOffset && offsetof(AddressEntry, recv) == kAddressRecvOffset &&
              offsetof(AddressEntry, scratch) == kAddressScratchOffset &&
              offsetof(AddressEntry, flags) == kAddressFlagsOffset);

struct RunBuffers {
  const void* send = nullptr;
  void* recv = nullptr;
  std::vector<void*> user;  // BufferId::User table
};

// One operation in flight on one communicator, advanced without blocking.
class OpRun {
 public:
  virtual ~OpRun() = default;
  // Does what it can without blocking. Sets *done when the operation has
  // completed; *progressed when anything moved.
  virtual Status advance(bool* done, bool* progressed) = 0;
  // The peer the run is waiting for right now (-1: none), for diagnostics.
  virtual int waitingOn() const = 0;
};

// One schedule bound to host buffers on one communicator.
class ScheduleRun final : public OpRun {
 public:
  // `tagSalt` (callTagSalt) goes into the tags of the run's messages.
  ScheduleRun(Communicator& comm, std::shared_ptr<const PreparedSchedule> prepared, RunBuffers buffers,
              ReduceSpec spec, uint32_t tagSalt = 0);
  ScheduleRun(Communicator& comm, Schedule schedule, RunBuffers buffers, ReduceSpec spec, uint32_t tagSalt = 0)
      : ScheduleRun(comm, prepareSchedule(std::move(schedule)), std::move(buffers), spec, tagSalt) {}
  ~ScheduleRun() override;
  ScheduleRun(const ScheduleRun&) = delete;
  ScheduleRun& operator=(const ScheduleRun&) = delete;
  Status advance(bool* done, bool* progressed) override;
  int waitingOn() const override;
  const Schedule& schedule() const { return schedule_; }

  // Whether a run of `prepared` can be run again on other buffers (rearm):
  // one that neither reaches peers' buffers nor needs transfers on the heap.
  static bool rearmable(const PreparedSchedule& prepared);
  // The last advance() completed it without a failure.
  bool finished() const { return finished_; }
  // Makes a finished, rearmable run start over on these buffers.
  void rearm(const void* send, void* recv, const ReduceSpec& spec, uint32_t tagSalt) {
    buffers_.send = send;
    buffers_.recv = recv;
    spec_ = spec;
    tag_ = schedule_.tag ^ tagSalt;
    // Other runs may have grown the communicator's scratch since.
    if (schedule_.scratchBytes > 0) scratch_ = comm_.acquireScratch(schedule_.scratchBytes, schedule_.scratchTurns);
    std::uninitialized_default_construct_n(transfers_, schedule_.transfers);
    staged_ = -1;
    pc_ = 0;
    finished_ = false;
  }

 private:
  void* resolve(const BufferRef& ref) const;
  // Counts this call's use of its own host buffers that peers copy through
  // the kernel, for the communicator's huge-page advisor.
  void adviseHugePages(const AddressEntry& self);
  // A peer's send or receive buffer, from the Addresses table, and the
  // address of `ref` in it.
  // Where `bytes` at `ref` of `peer`'s buffer are; an error if they are not
  // all within what the peer's call covers.
  Status peerBuffer(int peer, const BufferRef& ref, size_t bytes, const PeerBuffer** buffer, uint64_t* address) const;
  Status pollConnections(bool* progressed);
  // ReadPeer, WritePeer and ReducePeer.
  Status runPeerStep(const Step& st, Device& dev);
  // The peer's operand of a ReducePeer: where it is mapped (`mapped`: then
  // checkMappedAccess once it has been read), else read into the step's
  // bounce buffer first.
  Status peerOperand(const Step& reduce, const void** operand, bool* mapped);
  Status checkPeerSizes(int peer) const;
  // Whether `next` (a write into a peer or a copy) takes the whole Native
  // result of the ReducePeer `reduce` as it stands, and a kernel can store
  // that result into both at once.
  bool takesReduceResult(const Step& reduce, const Step& next) const;
  // A float sum of Native operands (sumToOwnAndPeer, sumToKeptAndOut).
  bool floatSum(const Step& reduce) const;
  // Runs `reduce` and the `write` after it as one pass where that is
  // possible (mapped peer memory); `fused` false: nothing was done.
  Status fuseReduceAndWrite(const Step& reduce, const Step& write, bool* fused);
  // The same for a ReducePeer and a Copy of its result.
  Status fuseReduceAndCopy(const Step& reduce, const Step& copy, bool* fused);
  // Whether a step conditional on how the run moves data runs.
  bool runs(const Step& st);
  StagingChoice::Shape shape() const { return {schedule_.tag, schedule_.sendBytes, schedule_.recvBytes}; }

  // Polls of a Wait step per advance where waits busy-poll (advance()).
  static constexpr int kPollsPerWait = 8;

  Communicator& comm_;
  std::shared_ptr<const PreparedSchedule> prepared_;
  const Schedule& schedule_;
  RunBuffers buffers_;
  ReduceSpec spec_;
  uint32_t tag_ = 0;  // of this run's messages: the schedule's, salted for the call
  std::byte* scratch_ = nullptr;  // the communicator's, until this run finishes
  std::unique_ptr<AddressEntry[]> addresses_;  // per rank, for direct access
  int staged_ = -1;        // the run stages (Only::Staged; -1: not yet known)
  bool chose_ = false;     // ... and it could have gone either way
  bool freshScratch_ = false;  // its scratch was not handed out before
  std::chrono::steady_clock::time_point started_{};  // when it began, where it could go either way
  // Most schedules have a handful of transfers (the flat small-message
  // round has 2(n-1)); those live in the run itself, with no allocation.
  // Only the schedule's own count is constructed there: clearing all of
  // them was a measurable part of a small call.
  static constexpr uint32_t kInlineTransfers = 8;
  static_assert(std::is_trivially_destructible_v<Transfer>);
  alignas(Transfer) std::byte inlineTransfers_[kInlineTransfers * sizeof(Transfer)];
  std::unique_ptr<Transfer[]> heapTransfers_;
  Transfer* transfers_ = nullptr;
  size_t pc_ = 0;
  bool finished_ = false;
};

// Room for the one operation of the latency path: a ScheduleRun built in
// place, without a heap allocation; any other kind of run on the heap.
class RunSlot {
 public:
  // User-provided: the defaulted constructor clears the whole of the
  // optional's storage, half a kilobyte, on every call.
  RunSlot() {}
  template <typename... Args>
  void emplaceSchedule(Args&&... args) {
    inPlace_.emplace(std::forward<Args>(args)...);
  }
  void set(std::unique_ptr<OpRun> run) { heap_ = std::move(run); }
  // A run that someone else keeps (core/kept_runs.h), for this operation.
  void borrow(OpRun& run) { borrowed_ = &run; }
  OpRun* get() { return borrowed_ ? borrowed_ : inPlace_ ? &*inPlace_ : heap_.get(); }
  const OpRun* get() const { return borrowed_ ? borrowed_ : inPlace_ ? &*inPlace_ : heap_.get(); }
  void reset() {
    borrowed_ = nullptr;
    inPlace_.reset();
    heap_.reset();
  }

 private:
  OpRun* borrowed_ = nullptr;
  std::optional<ScheduleRun> inPlace_;
  std::unique_ptr<OpRun> heap_;
};

// The work of one group on one communicator: operations that run one after
// another. Each is built only when it starts (so a pointer scalar is read
// then, and scratch is held only while needed).
class CommTask {
 public:
  using Maker = std::function<Status(RunSlot&)>;
  CommTask(std::shared_ptr<Communicator> comm, std::string callName);
  void add(Maker maker) { makers_.push_back(std::move(maker)); }
  Status advance(bool* done, bool* progressed);
  Communicator& comm() { return *comm_; }
  const std::string& callName() const { return callName_; }
  int waitingOn() const { return current_.get() ? current_.get()->waitingOn() : -1; }
  // Drops the run of a task that failed.
  void abandon() { current_.reset(); }

 private:
  std::shared_ptr<Communicator> comm_;
  std::string callName_;
  std::vector<Maker> makers_;
  size_t next_ = 0;
  RunSlot current_;
};

// Runs one operation alone on `comm`, as runTask runs a task of one:
// `make` fills the slot under the execution gate, then the run is driven
// until it completes, fails or stalls. It is issued now, on the calling
// thread: it first waits for the communicator's operations issued before it
// (core/issue_order.h). runTask and runTasks leave that to their callers,
// which take turns when the tasks are issued.
Status runSingle(Communicator& comm, const char* callName, FunctionRef<Status(RunSlot&)> make);
// runSingle's run, for a caller that already waited for the earlier
// operations and holds the communicator's execution gate.
Status runHeld(Communicator& comm, const char* callName, FunctionRef<Status(RunSlot&)> make);

// Drives tasks round-robin until all finish, one fails, a communicator is
// aborted, or nothing moves for the communicator's timeout. A failure marks
// the communicator failed, which breaks its links so peers fail too.
// With `turns` (the launch's, taken when it was issued), waits for them
// first, and releases each communicator's as soon as its tasks end: all are
// released when it returns.
Status runTasks(std::vector<std::unique_ptr<CommTask>>& tasks, Turns* turns = nullptr);
// The same for a single task.
Status runTask(CommTask& task);

}  // namespace hcl
