#include "core/executor.h"
#include "core/no_throw.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "core/log.h"
#include "core/shared_allocations.h"
#include "core/streaming_copy.h"

namespace hcl {
namespace {

PeerBuffer describeOwnBuffer(const void* p, size_t bytes) {
  PeerBuffer b;
  b.address = reinterpret_cast<uintptr_t>(p);
  b.bytes = bytes;
  if (p == nullptr) return b;
  if (const auto a = findSharedAllocation(p, 1)) {
    b.allocBase = a->base;
    b.allocSerial = a->serial;
    b.allocFd = a->fd;
  }
  return b;
}

}  // namespace

ScheduleRun::ScheduleRun(Communicator& comm, std::shared_ptr<const PreparedSchedule> prepared, RunBuffers buffers,
                         ReduceSpec spec, uint32_t tagSalt)
    : comm_(comm),
      prepared_(std::move(prepared)),
      schedule_(prepared_->schedule),
      buffers_(std::move(buffers)),
      spec_(spec),
      tag_(schedule_.tag ^ tagSalt) {
  if (schedule_.scratchBytes > 0) {
    scratch_ = comm_.acquireScratch(schedule_.scratchBytes, schedule_.scratchTurns, &freshScratch_);
  }
  if (schedule_.transfers > kInlineTransfers) {
    heapTransfers_ = std::make_unique<Transfer[]>(schedule_.transfers);
    transfers_ = heapTransfers_.get();
  } else {
    Transfer* first = reinterpret_cast<Transfer*>(inlineTransfers_);
    std::uninitialized_default_construct_n(first, schedule_.transfers);
    transfers_ = std::launder(first);
  }
  if (prepared_->direct) {
    addresses_ = std::make_unique<AddressEntry[]>(static_cast<size_t>(comm_.nranks()));
    AddressEntry& self = addresses_[static_cast<size_t>(comm_.rank())];
    self.send = describeOwnBuffer(buffers_.send, schedule_.sendBytes);
    self.recv = describeOwnBuffer(buffers_.recv, schedule_.recvBytes);
    self.scratch = describeOwnBuffer(scratch_, schedule_.scratchBytes);
    adviseHugePages(self);
    if (prepared_->stages) {
      if (comm_.stagingChoice().propose(shape())) self.flags |= kProposeStaging;
      started_ = std::chrono::steady_clock::now();
    }
  }
}

ScheduleRun::~ScheduleRun() {
  if (scratch_) comm_.releaseScratch();
}

void ScheduleRun::adviseHugePages(const AddressEntry& self) {
  // Device memory and hclMemAlloc memory are not copied through the kernel.
  if (comm_.device().kind() != DeviceKind::Cpu) return;
  const bool send = self.send.allocSerial == 0, recv = self.recv.allocSerial == 0;
  comm_.hugePages().noteUse(send ? buffers_.send : nullptr, send ? schedule_.sendBytes : 0,
                            recv ? buffers_.recv : nullptr, recv ? schedule_.recvBytes : 0);
}

bool ScheduleRun::rearmable(const PreparedSchedule& prepared) {
  // Short programs only: what a kept run saves is per call, which matters
  // for small messages, and a kept run holds its schedule.
  constexpr size_t kMaxSteps = 256;
  return !prepared.direct && prepared.schedule.transfers <= kInlineTransfers &&
         prepared.schedule.steps.size() <= kMaxSteps;
}

void* ScheduleRun::resolve(const BufferRef& ref) const {
  std::byte* base = nullptr;
  switch (ref.id) {
    case BufferId::Send: base = static_cast<std::byte*>(const_cast<void*>(buffers_.send)); break;
    case BufferId::Recv: base = static_cast<std::byte*>(buffers_.recv); break;
    case BufferId::Scratch: base = scratch_; break;
    case BufferId::User: base = static_cast<std::byte*>(buffers_.user.at(ref.index)); break;
    case BufferId::Addresses: base = reinterpret_cast<std::byte*>(addresses_.get()); break;
  }
  return base ? base + ref.offset : nullptr;
}

Status ScheduleRun::peerBuffer(int peer, const BufferRef& ref, size_t bytes, const PeerBuffer** buffer,
                               uint64_t* address) const {
  const PeerBuffer* b = nullptr;
  if (addresses_) {
    const AddressEntry& e = addresses_[static_cast<size_t>(peer)];
    if (ref.id == BufferId::Send) b = &e.send;
    if (ref.id == BufferId::Recv) b = &e.recv;
    if (ref.id == BufferId::Scratch) b = &e.scratch;
  }
  static const char* const kNames[] = {"send", "receive", "scratch", "user", "addresses"};
  const char* name = kNames[static_cast<size_t>(ref.id)];
  if (b == nullptr || b->address == 0) {
    return internalError(fmt::format("rank {}: {} schedule reaches a {} buffer rank {} did not give", comm_.rank(),
                                     schedule_.algorithm, name, peer));
  }
  // Ranks that disagree on the call's size would otherwise reach past each
  // other's buffers.
  if (ref.offset > b->bytes || bytes > b->bytes - ref.offset) {
    return invalidUsage(fmt::format("rank {}: rank {}'s {} buffer covers {} bytes but this call reaches byte {} of it "
                                    "(do the ranks agree on the count and data type?)",
                                    comm_.rank(), peer, name, b->bytes, ref.offset + bytes));
  }
  *buffer = b;
  *address = b->address + ref.offset;
  return {};
}

Status ScheduleRun::runPeerStep(const Step& st, Device& dev) {
  if (st.kind == Step::Kind::ReducePeer) {
    const void* a = nullptr;
    bool mapped = false;
    HCL_TRY(peerOperand(st, &a, &mapped));
    HCL_TRY(dev.reduce(resolve(st.dst), st.dstForm, a, st.aForm, resolve(st.b), st.bForm, st.count, spec_));
    return mapped ? comm_.connection(st.peer)->checkMappedAccess() : Status{};
  }
  const bool write = st.kind == Step::Kind::WritePeer;
  const PeerBuffer* pb = nullptr;
  uint64_t at = 0;
  HCL_TRY(peerBuffer(st.peer, write ? st.dst : st.a, st.bytes, &pb, &at));
  Connection* c = comm_.connection(st.peer);
  // Mapped peer memory is loaded and stored directly; otherwise the
  // connection copies (process_vm_readv/writev, or in-process memcpy).
  void* mapped = c->mapPeer(*pb, at, st.bytes);
  if (st.kind == Step::Kind::WritePeer) {
    if (!mapped) return c->writePeer(at, resolve(st.a), st.bytes);
    // This rank never reads the result it stores into a peer: the stores
    // bypass the cache (about 10% faster from 64 MiB, docs/performance.md).
    streamingCopy(mapped, resolve(st.a), st.bytes);
    return c->checkMappedAccess();
  }
  if (!mapped) return c->readPeer(at, resolve(st.dst), st.bytes);
  if (st.streamDst) {
    streamingCopy(resolve(st.dst), mapped, st.bytes);
  } else {
    std::memcpy(resolve(st.dst), mapped, st.bytes);
  }
  return c->checkMappedAccess();
}

Status ScheduleRun::checkPeerSizes(int peer) const {
  // The step makes the schedule a direct one, so the entries exist.
  const AddressEntry& theirs = addresses_[static_cast<size_t>(peer)];
  const AddressEntry& ours = addresses_[static_cast<size_t>(comm_.rank())];
  if (theirs.send.bytes == ours.send.bytes && theirs.recv.bytes == ours.recv.bytes) return {};
  return invalidUsage(fmt::format("rank {}: rank {}'s call covers {} send and {} receive bytes, this rank's {} and {} "
                                  "(do the ranks agree on the count and data type?)",
                                  comm_.rank(), peer, theirs.send.bytes, theirs.recv.bytes, ours.send.bytes,
                                  ours.recv.bytes));
}

Status ScheduleRun::peerOperand(const Step& reduce, const void** operand, bool* mapped) {
  const PeerBuffer* from = nullptr;
  uint64_t at = 0;
  HCL_TRY(peerBuffer(reduce.peer, reduce.a, reduce.bytes, &from, &at));
  Connection* c = comm_.connection(reduce.peer);
  *operand = c->mapPeer(*from, at, reduce.bytes);
  *mapped = *operand != nullptr;
  if (*mapped) return {};
  HCL_TRY(c->readPeer(at, resolve(reduce.via), reduce.bytes));
  *operand = resolve(reduce.via);
  return {};
}

bool ScheduleRun::floatSum(const Step& reduce) const {
  return spec_.type == hclFloat32 && spec_.kind == ReduceKind::Sum && reduce.aForm == Form::Native &&
         reduce.bForm == Form::Native;
}

Status ScheduleRun::fuseReduceAndWrite(const Step& reduce, const Step& write, bool* fused) {
  // A sum into our buffer whose result is then copied into a peer's: with
  // both peers' memory mapped, one pass computes it into both.
  *fused = false;
  if (write.kind != Step::Kind::WritePeer || !takesReduceResult(reduce, write)) return {};
  const PeerBuffer *from = nullptr, *to = nullptr;
  uint64_t fromAt = 0, toAt = 0;
  // Out of range: the unfused steps report it.
  if (!peerBuffer(reduce.peer, reduce.a, reduce.bytes, &from, &fromAt).ok() ||
      !peerBuffer(write.peer, write.dst, write.bytes, &to, &toAt).ok())
    return {};
  // Mapping `in` never drops `out`, the mapping returned just before.
  Connection* writeTo = comm_.connection(write.peer);
  Connection* readFrom = comm_.connection(reduce.peer);
  void* out = writeTo->mapPeer(*to, toAt, write.bytes);
  const void* in = out ? readFrom->mapPeer(*from, fromAt, reduce.bytes) : nullptr;
  if (!in) return {};
  const SumStores stores = sumStoresFor(std::max(schedule_.sendBytes, schedule_.recvBytes), comm_.nranks(),
                                        comm_.cpuFamily(), comm_.sharedCpus());
  if (floatSum(reduce)) {
    sumToOwnAndPeer(static_cast<float*>(resolve(reduce.dst)), static_cast<float*>(out), static_cast<const float*>(in),
                    static_cast<const float*>(resolve(reduce.b)), reduce.count, stores);
  } else {
    reduceTwice(resolve(reduce.dst), out, in, resolve(reduce.b), reduce.count, spec_,
                stores == SumStores::BothStreamed, stores != SumStores::Cached);
  }
  *fused = true;
  HCL_TRY(readFrom->checkMappedAccess());
  return writeTo == readFrom ? Status{} : writeTo->checkMappedAccess();
}

bool ScheduleRun::takesReduceResult(const Step& reduce, const Step& next) const {
  return reduce.kind == Step::Kind::ReducePeer && next.only == reduce.only && reduce.dstForm == Form::Native &&
         reduce.aForm == Form::Native && reduce.bForm == Form::Native &&
         (floatSum(reduce) || reducesTwice(spec_.type)) && next.a.id == reduce.dst.id &&
         next.a.offset == reduce.dst.offset && next.bytes == reduce.count * dataTypeSize(spec_.type);
}

Status ScheduleRun::fuseReduceAndCopy(const Step& reduce, const Step& copy, bool* fused) {
  // A sum into scratch that the schedule then copies into our buffer: one
  // pass stores both.
  *fused = false;
  if (copy.kind != Step::Kind::Copy || !takesReduceResult(reduce, copy)) return {};
  const void* in = nullptr;
  bool mapped = false;
  void* const out = resolve(copy.dst);
  const void* const local = resolve(reduce.b);
  // One pass reads each input element before storing that element, so the
  // copy may land on an input only exactly.
  const size_t bytes = copy.bytes;
  const auto apart = [&](const void* p) {
    const auto* q = static_cast<const std::byte*>(p);
    const auto* o = static_cast<const std::byte*>(out);
    return p == out || q + bytes <= o || o + bytes <= q;
  };
  if (!apart(local)) return {};
  HCL_TRY(peerOperand(reduce, &in, &mapped));
  if (!apart(in)) return {};
  if (floatSum(reduce)) {
    sumToKeptAndOut(static_cast<float*>(resolve(reduce.dst)), static_cast<float*>(out), static_cast<const float*>(in),
                    static_cast<const float*>(local), reduce.count, copy.streamDst);
  } else {
    reduceTwice(resolve(reduce.dst), out, in, local, reduce.count, spec_, false, copy.streamDst);
  }
  *fused = true;
  return mapped ? comm_.connection(reduce.peer)->checkMappedAccess() : Status{};
}

bool ScheduleRun::runs(const Step& st) {
  if (st.only == Only::Always) return true;
  if (staged_ < 0) {
    // Every rank sees the same exchanged entries, so all decide alike.
    bool shareable = addresses_ != nullptr;
    auto both = [](const AddressEntry& e) { return e.send.allocSerial != 0 && e.recv.allocSerial != 0; };
    if (shareable) shareable = both(addresses_[static_cast<size_t>(comm_.rank())]);
    for (int p : prepared_->peers) shareable = shareable && both(addresses_[static_cast<size_t>(p)]);
    // The first rank's proposal decides (core/staging_choice.h).
    int first = comm_.rank();
    for (int p : prepared_->peers) first = std::min(first, p);
    chose_ = prepared_->stages && addresses_ && !shareable;
    staged_ = chose_ && (addresses_[static_cast<size_t>(first)].flags & kProposeStaging) != 0 ? 1 : 0;
  }
  return (st.only == Only::Staged) == (staged_ == 1);
}

Status ScheduleRun::pollConnections(bool* progressed) {
  for (int p : prepared_->peers) {
    HCL_TRY(comm_.connection(p)->progress(progressed));
  }
  return {};
}

int ScheduleRun::waitingOn() const {
  if (pc_ < schedule_.steps.size()) {
    const Step& st = schedule_.steps[pc_];
    if (st.kind == Step::Kind::Wait) return prepared_->transferPeer[st.transfer];
  }
  for (uint32_t t = 0; t < schedule_.transfers; ++t) {
    if (!transfers_[t].done()) return prepared_->transferPeer[t];
  }
  return -1;
}

Status ScheduleRun::advance(bool* done, bool* progressed) {
  *done = false;
  // Schedules run on host memory, through cpuDevice(); device buffers are
  // staged (staged_run.h).
  while (pc_ < schedule_.steps.size()) {
    const Step& st = schedule_.steps[pc_];
    if (!runs(st)) {
      ++pc_;
      continue;
    }
    switch (st.kind) {
      case Step::Kind::Send:
      case Step::Kind::Recv: {
        Transfer& t = transfers_[st.transfer];
        t.isSend = st.kind == Step::Kind::Send;
        t.buffer = resolve(t.isSend ? st.a : st.dst);
        t.bytes = st.bytes;
        t.tag = tag_;
        HCL_TRY(comm_.connection(st.peer)->post(t));
        break;
      }
      case Step::Kind::Wait: {
        Transfer& t = transfers_[st.transfer];
        if (!t.done()) {
          // A few polls here before going back through the driver's checks:
          // a message that lands meanwhile is seen sooner (2 ranks, 8 B:
          // 0.30 -> 0.29 us). Not where ranks share cores: there the driver
          // yields after a few idle polls, and polling 8 times as long
          // before that kept the sender off the core (4 ranks on 2 cores,
          // 8 B: 2.1 -> 2.8 us).
          const int polls = comm_.settings().spinUs > 0 ? kPollsPerWait : 1;
          for (int i = 0; i < polls && !t.done(); ++i) HCL_TRY(pollConnections(progressed));
          if (!t.done()) return {};
        }
        if (t.failed()) {
          return remoteError(fmt::format("rank {}: transfer with rank {} failed", comm_.rank(),
                                         prepared_->transferPeer[st.transfer]));
        }
        break;
      }
      case Step::Kind::CheckPeerSizes:
        HCL_TRY(checkPeerSizes(st.peer));
        break;
      case Step::Kind::Reduce:
        HCL_TRY(cpuDevice().reduce(resolve(st.dst), st.dstForm, resolve(st.a), st.aForm, resolve(st.b), st.bForm,
                           st.count, spec_));
        *progressed = true;
        break;
      case Step::Kind::Convert:
        HCL_TRY(cpuDevice().convert(resolve(st.dst), st.dstForm, resolve(st.a), st.aForm, st.count, spec_));
        *progressed = true;
        break;
      case Step::Kind::Copy:
        if (st.streamDst) {
          streamingCopy(resolve(st.dst), resolve(st.a), st.bytes);
        } else {
          HCL_TRY(cpuDevice().copy(resolve(st.dst), resolve(st.a), st.bytes));
        }
        *progressed = true;
        break;
      case Step::Kind::ReadPeer:
      case Step::Kind::WritePeer:
      case Step::Kind::ReducePeer: {
        // Fusion pairs a step with the next, which has the same condition.
        const Step* next = pc_ + 1 < schedule_.steps.size() ? &schedule_.steps[pc_ + 1] : nullptr;
        bool fused = false;
        if (next) HCL_TRY(fuseReduceAndWrite(st, *next, &fused));
        if (!fused && next) HCL_TRY(fuseReduceAndCopy(st, *next, &fused));
        if (fused) {
          ++pc_;  // the write or copy is done too
        } else {
          HCL_TRY(runPeerStep(st, cpuDevice()));
        }
        *progressed = true;
        break;
      }
    }
    ++pc_;
  }
  // Every step ran; the run ends when the last transfers complete.
  for (uint32_t t = 0; t < schedule_.transfers; ++t) {
    if (!transfers_[t].done()) {
      HCL_TRY(pollConnections(progressed));
      if (!transfers_[t].done()) return {};
    }
    if (transfers_[t].failed()) {
      return remoteError(fmt::format("rank {}: transfer with rank {} failed", comm_.rank(), prepared_->transferPeer[t]));
    }
  }
  *done = true;
  finished_ = true;
  if (chose_ && freshScratch_) {
    // A call that faulted its scratch in says nothing about the next.
    comm_.stagingChoice().skip(shape(), staged_ == 1);
  } else if (chose_) {
    const auto took = std::chrono::steady_clock::now() - started_;
    StagingChoice& choice = comm_.stagingChoice();
    if (choice.record(shape(), staged_ == 1, std::chrono::duration_cast<std::chrono::nanoseconds>(took).count())) {
      const bool staging = choice.leadsWithStaging(shape());
      log::info(log::Tuning, "rank {}: {} ({} bytes): now {} (staged {:.1f} us, direct {:.1f} us)", comm_.rank(),
                schedule_.algorithm, schedule_.sendBytes, staging ? "stages" : "goes straight between the buffers",
                choice.estimateNanos(shape(), true) / 1e3, choice.estimateNanos(shape(), false) / 1e3);
    }
  }
  if (scratch_ && staged_ == 1) comm_.scratchStaged();
  // A kept run lets go of the scratch between calls, as a destroyed one does.
  if (scratch_) {
    comm_.releaseScratch();
    scratch_ = nullptr;
  }
  return {};
}

CommTask::CommTask(std::shared_ptr<Communicator> comm, std::string callName)
    : comm_(std::move(comm)), callName_(std::move(callName)) {}

Status CommTask::advance(bool* done, bool* progressed) {
  *done = false;
  while (true) {
    if (!current_.get()) {
      if (next_ == makers_.size()) {
        *done = true;
        return {};
      }
      HCL_TRY(makers_[next_++](current_));
    }
    bool runDone = false;
    HCL_TRY(current_.get()->advance(&runDone, progressed));
    if (!runDone) return {};
    current_.reset();
    *progressed = true;
  }
}

namespace {

// Notices a task that stopped progressing. The clock is read only on idle
// rounds, and only every few of them, so the latency path takes no
// timestamps.
class ProgressWatch {
 public:
  void progressed() { sawProgress_ = true; }
  // True once nothing has moved for about `timeoutMs` (0: never).
  bool stalled(int64_t timeoutMs) {
    constexpr uint32_t kIdleRoundsPerCheck = 16;
    if (timeoutMs <= 0 || ++idleRounds_ % kIdleRoundsPerCheck != 0) return false;
    const auto now = Clock::now();
    if (sawProgress_ || last_ == Clock::time_point{}) {
      last_ = now;
      sawProgress_ = false;
      return false;
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(now - last_).count() > timeoutMs;
  }

 private:
  Clock::time_point last_{};
  bool sawProgress_ = false;
  uint32_t idleRounds_ = 0;
};

// Advances `task` once. Sets *done when it finished or failed; a failure
// marks its communicator failed, which breaks its links so peers fail too
// and no connection touches the task's transfers again.
template <typename Work>
Status stepWork(Communicator& comm, const char* callName, Work& work, ProgressWatch& watch, bool* done,
                bool* progressed) {
  Status s;
  if (comm.abortFlag().load(std::memory_order_acquire)) {
    s = remoteError(fmt::format("rank {}: communicator {}", comm.rank(), comm.revoked() ? "revoked" : "aborted"));
  } else if (Status f = comm.failure(); !f.ok()) {
    s = f;
  } else {
    // An exception (out of memory while building a run) fails the
    // communicator like any error, so posted transfers are withdrawn.
    s = noThrow(callName, [&] { return work.advance(done, progressed); });
    if (s.ok() && *done) return {};
    if (*progressed) {
      watch.progressed();
    } else if (s.ok() && watch.stalled(comm.settings().timeoutMs)) {
      const int peer = work.waitingOn();
      const Connection* c = peer >= 0 ? comm.connection(peer) : nullptr;
      s = remoteError(fmt::format("rank {}: no progress for {} ms waiting for rank {} ({})", comm.rank(),
                                  comm.settings().timeoutMs, peer, c ? c->describe() : "?"));
    }
  }
  if (s.ok()) return {};
  Status withCall = s.withContext(callName);
  comm.fail(withCall);
  // Still under the execution gate: a run ends where it began, since it
  // gives back the communicator's scratch.
  work.abandon();
  *done = true;
  return withCall;
}

Status stepTask(CommTask& task, ProgressWatch& watch, bool* done, bool* progressed) {
  return stepWork(task.comm(), task.callName().c_str(), task, watch, done, progressed);
}

// Drives `work` on its own until it is done.
template <typename Work>
Status driveAlone(Communicator& comm, const char* callName, Work& work) {
  ProgressWatch watch;
  Backoff backoff(comm.settings().spinUs);
  while (true) {
    bool done = false, progressed = false;
    Status s = stepWork(comm, callName, work, watch, &done, &progressed);
    if (done) return s;
    if (progressed) {
      backoff.reset();
    } else {
      backoff.pause();
    }
  }
}

}  // namespace

// The common case, one communicator: no bookkeeping beyond the loop.
Status runTask(CommTask& task) {
  const ExecutionGate::Hold hold = task.comm().executionGate().enter();
  return driveAlone(task.comm(), task.callName().c_str(), task);
}

Status runSingle(Communicator& comm, const char* callName, FunctionRef<Status(RunSlot&)> make) {
  comm.issueOrder().waitUntilIdle(comm.abortFlag(), comm.settings().spinUs);
  const ExecutionGate::Hold hold = comm.executionGate().enter();
  return runHeld(comm, callName, make);
}

Status runHeld(Communicator& comm, const char* callName, FunctionRef<Status(RunSlot&)> make) {
  RunSlot slot;
  // A failure to build the run is reported like one of the run itself.
  struct Work {
    RunSlot& slot;
    FunctionRef<Status(RunSlot&)> make;
    bool made = false;
    Status advance(bool* done, bool* progressed) {
      *done = false;
      if (!made) {
        made = true;
        HCL_TRY(make(slot));
      }
      return slot.get()->advance(done, progressed);
    }
    int waitingOn() const { return made && slot.get() ? slot.get()->waitingOn() : -1; }
    void abandon() { slot.reset(); }
  } work{slot, make};
  return driveAlone(comm, callName, work);
}

Status runTasks(std::vector<std::unique_ptr<CommTask>>& tasks, Turns* turns) {
  if (turns) turns->wait();
  if (tasks.size() == 1) {
    const Status s = runTask(*tasks[0]);
    if (turns) turns->release();
    return s;
  }
  // Lock communicators in a fixed order so two launches on the same set
  // cannot deadlock; each is unlocked as soon as its tasks end, so an
  // hclCommAbort waiting for it returns promptly.
  std::vector<Communicator*> comms;
  for (auto& t : tasks) comms.push_back(&t->comm());
  std::sort(comms.begin(), comms.end());
  comms.erase(std::unique(comms.begin(), comms.end()), comms.end());
  std::vector<ExecutionGate::Hold> holds;
  for (Communicator* c : comms) holds.push_back(c->executionGate().enter());
  std::vector<size_t> unfinishedPerComm(comms.size(), 0);
  auto commIndex = [&](Communicator* c) {
    return static_cast<size_t>(std::lower_bound(comms.begin(), comms.end(), c) - comms.begin());
  };
  for (auto& t : tasks) ++unfinishedPerComm[commIndex(&t->comm())];

  std::vector<bool> finished(tasks.size(), false);
  std::vector<ProgressWatch> watches(tasks.size());
  size_t remaining = tasks.size();
  int64_t spinUs = 0;
  for (Communicator* c : comms) spinUs = std::max(spinUs, c->settings().spinUs);
  Backoff backoff(spinUs);
  Status firstError;
  while (remaining > 0) {
    bool anyProgress = false;
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (finished[i]) continue;
      bool done = false, progressed = false;
      Status s = stepTask(*tasks[i], watches[i], &done, &progressed);
      if (!s.ok() && firstError.ok()) firstError = s;
      if (progressed || done) anyProgress = true;
      if (done) {
        finished[i] = true;
        --remaining;
        const size_t ci = commIndex(&tasks[i]->comm());
        if (--unfinishedPerComm[ci] == 0) {
          holds[ci].release();
          if (turns) turns->release(comms[ci]);
        }
      }
    }
    if (anyProgress) {
      backoff.reset();
    } else if (remaining > 0) {
      backoff.pause();
    }
  }
  return firstError;
}

}  // namespace hcl
