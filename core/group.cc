#include "core/group.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

#include "collectives/algorithms/p2p.h"
#include "core/call_tag.h"
#include "core/executor.h"
#include "core/group_tasks.h"
#include "core/issue_order.h"
#include "core/log.h"
#include "core/no_throw.h"
#include "core/op_estimate.h"
#include "core/stream_launch.h"

namespace hcl {
namespace {

// The streams a group's operations hold (one count per operation), so that
// hclStreamDestroy refuses them until the group has been queued on them.
std::vector<hclStream*> heldStreams(const std::vector<PendingOp>& ops) {
  std::vector<hclStream*> held;
  for (const PendingOp& op : ops) {
    if (op.stream) held.push_back(op.stream);
  }
  return held;
}

void releaseStreams(const std::vector<hclStream*>& held) {
  for (hclStream* s : held) s->inOpenGroups.fetch_sub(1, std::memory_order_acq_rel);
}

void releaseStreams(const std::vector<PendingOp>& ops) { releaseStreams(heldStreams(ops)); }

// The groups the calling thread has open. Apart from the rest of the
// group's state: read by every call, it needs no initialisation check, and
// it is initial-exec like the handle check's (core/handles.cc).
[[gnu::tls_model("initial-exec")]] constinit thread_local int tlsGroupDepth = 0;

struct GroupState {
  std::vector<PendingOp> ops;
  std::vector<DeferredInit> inits;
  Status firstFailure;  // of a call made inside the open group
  // A thread that ends with its group open would otherwise leave the
  // group's communicators pending for ever.
  ~GroupState() {
    if (inits.empty() && ops.empty()) return;
    log::warn(log::Call, "a thread ended with its group open: {} operation(s) and {} communicator creation(s) "
              "dropped", ops.size(), inits.size());
    const Status gone = invalidUsage("the thread that called hclGroupStart ended before its hclGroupEnd");
    for (DeferredInit& init : inits) init.drop(gone);
    releaseStreams(ops);
  }
};

// NCCL's groups are per thread.
thread_local GroupState tlsGroup;

// A stream job that calls `dropped` if the stream destroys it unrun (a
// stream whose worker failed to start skips its jobs), so that nothing waits
// for it for ever.
std::function<Status()> reportIfDropped(std::function<Status()> job, std::function<void()> dropped) {
  struct Guard {
    std::function<Status()> job;
    std::function<void()> dropped;
    bool ran = false;
    ~Guard() {
      if (!ran && dropped) dropped();
    }
  };
  auto guard = std::make_shared<Guard>();
  guard->job = std::move(job);
  guard->dropped = std::move(dropped);
  return [guard]() -> Status {
    guard->ran = true;
    return guard->job();
  };
}

Status droppedByItsStream() {
  return {hclSystemError, "a stream of the launch skipped it (the stream could not start or hold its work)"};
}

// Launches on HCL's own streams (core/stream_launch.h serves those on
// device-runtime streams).
Status runOnStreams(std::vector<std::unique_ptr<CommTask>> tasks, std::vector<hclStream*> streams, Turns turns) {
  // The whole launch runs on the first stream's worker once every involved
  // stream has reached it; the other streams wait for it to finish, which
  // keeps each stream's order, and report its result too.
  struct Launch {
    std::vector<std::unique_ptr<CommTask>> tasks;
    Turns turns;  // after the tasks, which keep its communicators alive
    std::atomic<size_t> arrived{0};
    std::atomic<bool> incomplete{false};  // a follower's job was dropped, or never queued
    std::atomic<bool> finished{false};
    Status result;
    void finish(Status s) {
      result = std::move(s);
      finished.store(true, std::memory_order_release);
    }
  };
  auto launch = std::make_shared<Launch>();
  launch->tasks = std::move(tasks);
  launch->turns = std::move(turns);
  const size_t n = streams.size();
  // Two launches over the same streams whose jobs interleaved (one first on
  // A, the other first on B) would each wait for a job queued behind the
  // other's. Queueing under every stream's lock, taken in one global order,
  // gives all launches the same order on every stream.
  std::vector<hclStream*> byAddress = streams;
  std::sort(byAddress.begin(), byAddress.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (hclStream* s : byAddress) locks.emplace_back(s->groupLaunch);
  streams[0]->impl->enqueue(reportIfDropped(
      [launch, n]() -> Status {
        launch->arrived.fetch_add(1);
        Backoff backoff;
        while (launch->arrived.load() < n && !launch->incomplete.load()) backoff.pause();
        if (launch->incomplete.load()) {
          launch->turns.release();
          launch->finish(droppedByItsStream());
          return launch->result;
        }
        Status s = runTasks(launch->tasks, &launch->turns);  // releases the turns before the tasks go
        launch->tasks.clear();
        launch->finish(std::move(s));
        return launch->result;
      },
      [launch] {
        launch->turns.release();
        launch->finish(droppedByItsStream());
      }));
  try {
    for (size_t i = 1; i < n; ++i) {
      streams[i]->impl->enqueue(reportIfDropped(
          [launch]() -> Status {
            launch->arrived.fetch_add(1);
            Backoff backoff;
            while (!launch->finished.load(std::memory_order_acquire)) backoff.pause();
            return launch->result;
          },
          [launch] {
            launch->incomplete.store(true);
            launch->arrived.fetch_add(1);
          }));
    }
  } catch (...) {
    launch->incomplete.store(true);  // the queued lead gives up instead of waiting for the rest
    throw;
  }
  return {};
}

// Returns once the work queued on `streams` so far has run. Unlike
// synchronize(), it leaves that work's errors for hclStreamSynchronize: they
// are not this group's.
void waitForQueuedWork(const std::vector<hclStream*>& streams) {
  auto reached = std::make_shared<std::atomic<size_t>>(0);
  for (hclStream* s : streams) {
    s->impl->enqueue(reportIfDropped(
        [reached]() -> Status {
          reached->fetch_add(1, std::memory_order_release);
          return {};
        },
        [reached] { reached->fetch_add(1, std::memory_order_release); }));
  }
  Backoff backoff;
  while (reached->load(std::memory_order_acquire) < streams.size()) backoff.pause();
}

// Sends to self pair with receives from self, per communicator, in call
// order and of equal sizes. Checked before anything is launched, so that a
// mismatch is the caller's error and leaves the communicator usable.
Status checkSelfExchanges(const std::vector<PendingOp>& ops) {
  auto toSelf = [](const PendingOp& op) { return op.kind == CollKind::SendRecv && op.root == op.comm->rank(); };
  std::vector<const Communicator*> checked;
  for (const PendingOp& first : ops) {
    if (!toSelf(first) || std::find(checked.begin(), checked.end(), first.comm.get()) != checked.end()) continue;
    checked.push_back(first.comm.get());
    std::vector<P2PCall> calls;
    for (const PendingOp& op : ops) {
      if (op.comm == first.comm && toSelf(op)) calls.push_back({op.isSend, op.root, op.count * dataTypeSize(op.type)});
    }
    std::string error;
    if (!selfExchangesPair(calls, first.comm->rank(), error)) return invalidUsage(error);
  }
  return {};
}

Status launchUnguarded(std::vector<PendingOp> ops) {
  if (ops.empty()) return {};
  if (onDeviceStreams(ops)) return launchOnDeviceStreams(std::move(ops));
  std::vector<hclStream*> streams;
  bool anyNullStream = false;
  for (const PendingOp& op : ops) {
    if (!op.stream) {
      anyNullStream = true;
    } else if (std::find(streams.begin(), streams.end(), op.stream) == streams.end()) {
      streams.push_back(op.stream);
    }
  }
  std::vector<Communicator*> comms;
  for (const PendingOp& op : ops) comms.push_back(op.comm.get());
  Turns turns(std::move(comms));
  auto tasks = buildTasks(ops);
  if (!anyNullStream) return runOnStreams(std::move(tasks), std::move(streams), std::move(turns));
  // Blocking launch: earlier work on the involved streams comes first, and
  // earlier operations of its communicators on other streams.
  waitForQueuedWork(streams);
  return runTasks(tasks, &turns);
}

// An exception (out of memory) may leave part of the group queued and the
// rest not: the ranks would then be out of step, so its communicators fail.
Status launch(std::vector<PendingOp> ops) {
  // A device runtime takes about a thousand launches on a stream before the
  // caller blocks; so do HCL's streams, so that a loop that never waits
  // holds bounded memory and a hang shows in the calls that issue it.
  for (const PendingOp& op : ops) {
    if (op.stream) op.stream->impl->waitForRoom(kMaxPendingLaunches);
  }
  std::vector<std::shared_ptr<Communicator>> comms;
  for (const PendingOp& op : ops) {
    if (std::find(comms.begin(), comms.end(), op.comm) == comms.end()) comms.push_back(op.comm);
  }
  const char* call = ops.size() == 1 ? ops.front().call : "hclGroupEnd";
  try {
    return launchUnguarded(std::move(ops));
  } catch (...) {
    const Status s = noThrow(call, [e = std::current_exception()]() -> Status { std::rethrow_exception(e); });
    for (const auto& c : comms) c->fail(s);
    return s;
  }
}

// Inits run concurrently (ranks of one communicator driven by one thread
// must meet), except that the creations from one parent form one sequence.
Status runInits(std::vector<DeferredInit> inits) {
  if (inits.size() == 1) return inits[0].run();
  std::vector<std::vector<size_t>> sequences;
  std::vector<const void*> parents;
  for (size_t i = 0; i < inits.size(); ++i) {
    const auto same = std::find(parents.begin(), parents.end(), inits[i].parent);
    if (inits[i].parent && same != parents.end()) {
      sequences[static_cast<size_t>(same - parents.begin())].push_back(i);
    } else {
      parents.push_back(inits[i].parent);
      sequences.push_back({i});
    }
  }
  std::vector<Status> results(inits.size());
  {
    std::vector<std::jthread> threads;
    size_t started = 0;
    Status cannotStart;
    for (; started < sequences.size() && cannotStart.ok(); ++started) {
      cannotStart = noThrow("starting an init thread", [&]() -> Status {
        threads.emplace_back([&, sequence = sequences[started]] {
          for (size_t i : sequence) results[i] = inits[i].run();
        });
        return {};
      });
    }
    if (!cannotStart.ok()) {
      // The started inits would wait for the others until the timeout.
      for (DeferredInit& init : inits) {
        if (init.cancel) init.cancel();
      }
      for (size_t q = started - 1; q < sequences.size(); ++q) {
        for (size_t i : sequences[q]) {
          inits[i].drop(cannotStart);
          results[i] = cannotStart;
        }
      }
    }
  }
  for (const Status& s : results) {
    if (!s.ok()) return s;
  }
  return {};
}

// Closes one level of the calling thread's group. At the outermost level
// (`outermost` true) runs the group's inits and hands over its checked
// operations in `ops`; a group in which a call failed, or that the caller
// refuses to end (`refusal`), is dropped instead, its inits told why.
Status closeLevel(const char* call, const Status& refusal, bool& outermost, std::vector<PendingOp>& ops) {
  outermost = false;
  if (tlsGroupDepth == 0) return invalidUsage(fmt::format("{}: no matching hclGroupStart", call));
  // As NCCL: an inner end only closes its level; a simInfo is read at the outermost.
  if (--tlsGroupDepth > 0) return {};
  outermost = true;
  auto inits = std::exchange(tlsGroup.inits, {});
  ops = std::exchange(tlsGroup.ops, {});
  const Status failure = std::exchange(tlsGroup.firstFailure, Status{});
  Status dropped = refusal;
  if (!failure.ok()) {
    dropped = {failure.code(), fmt::format("{}: nothing in the group ran because a call in it failed: {}", call,
                                           failure.message())};
  }
  if (!dropped.ok()) {
    for (DeferredInit& init : inits) init.drop(dropped);
    releaseStreams(ops);
    ops.clear();
    return dropped;
  }
  if (!inits.empty()) HCL_TRY(runInits(std::move(inits)));
  return checkSelfExchanges(ops).withContext(call);
}

}  // namespace

bool inGroup() { return tlsGroupDepth > 0; }

Status groupStart() {
  ++tlsGroupDepth;
  return {};
}

Status groupEnd() {
  bool outermost = false;
  std::vector<PendingOp> ops;
  const Status closed = closeLevel("hclGroupEnd", Status{}, outermost, ops);
  // Until its operations are queued, the group still holds their streams.
  struct Hold {
    std::vector<hclStream*> streams;
    ~Hold() { releaseStreams(streams); }
  } hold{heldStreams(ops)};
  return closed.ok() && outermost ? launch(std::move(ops)) : closed;
}

Status groupSimulateEnd(const Status& refusal, double& estimated) {
  bool outermost = false;
  std::vector<PendingOp> ops;
  const Status closed = closeLevel("hclGroupSimulateEnd", refusal, outermost, ops);
  if (closed.ok() && outermost) {
    estimated = 0;
    for (const PendingOp& op : ops) estimated += estimatedUs(op);
  }
  releaseStreams(ops);
  return closed;
}

bool openGroupUses(const hclStream* stream) { return stream->inOpenGroups.load(std::memory_order_acquire) > 0; }

Status submit(PendingOp&& op, ExecutionGate::Hold heldAsOwner) {
  if (op.kind != CollKind::SendRecv) {
    Communicator& issuer = op.comm ? *op.comm : *op.handle->impl;
    op.tagSalt = callTagSalt(issuer.nextCallSerial(), op);
  }
  if (heldAsOwner) {
    // The latency path: with nothing issued before it outstanding, the
    // collective runs right here, on the gate its caller holds, and takes
    // no reference to the communicator.
    assert(!op.stream && !inGroup() && op.kind != CollKind::SendRecv);
    Communicator& comm = *op.handle->impl;
    if (comm.issueOrder().idle()) {
      return runHeld(comm, op.call, [&](RunSlot& out) { return makeCollectiveRun(comm, op, out); });
    }
    op.comm = op.handle->impl;  // a reference before the gate is let go
    heldAsOwner.release();
  }
  const bool grouped = inGroup();
  const bool now = !grouped && !op.stream && op.kind != CollKind::SendRecv;
  if (grouped) {
    hclStream* stream = op.stream;
    tlsGroup.ops.push_back(std::move(op));  // first: it may throw
    if (stream) stream->inOpenGroups.fetch_add(1, std::memory_order_acq_rel);
    return {};
  }
  // A collective on the null stream waits for what was issued before it,
  // then runs right here, without a task list.
  if (now) {
    Communicator& comm = *op.comm;
    return runSingle(comm, op.call, [&](RunSlot& out) { return makeCollectiveRun(comm, op, out); });
  }
  std::vector<PendingOp> ops;
  ops.push_back(std::move(op));
  HCL_TRY(checkSelfExchanges(ops).withContext(ops.front().call));
  return launch(std::move(ops));
}

Status failGroup(Status failure) {
  if (!failure.ok() && inGroup() && tlsGroup.firstFailure.ok()) tlsGroup.firstFailure = failure;
  return failure;
}

void deferInit(DeferredInit init) { tlsGroup.inits.push_back(std::move(init)); }

}  // namespace hcl
