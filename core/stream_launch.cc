#include "core/stream_launch.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "core/group_tasks.h"
#include "core/ipc_run.h"
#include "core/no_throw.h"
#include "core/stand_ins.h"
#include "core/staged_run.h"
#include "device/gated_stream.h"

namespace hcl {
namespace {

// Puts a launch that was set up on its streams; cannot fail (failures on
// the streams reach the launch's job).
using LaunchIssue = std::function<void()>;

// Whether one communicator's launch can be put on its device-runtime stream
// as its collectives' chunk pipelines: staged collectives on one stream (so
// that the worker finishes their chunks, and releases their tickets, in the
// order they were issued).
bool pipelinesOnStream(const std::vector<PendingOp>& ops) {
  for (const PendingOp& op : ops) {
    if (op.stream != ops.front().stream) return false;
    if (op.kind == CollKind::SendRecv || !op.comm->staged() || op.count == 0) return false;
  }
  return true;
}

// `bytes` of the pinned block that `area` keeps for `stream`'s stand-ins.
// Growing frees the old block, which earlier calls' copies on the stream may
// still use: they finish first. Called before anything of a group is
// issued, so this waits only for earlier launches, and only when a block
// is replaced: the first launch that needs one returns at once.
Status pinnedBlock(StagingArea& area, hclStream* stream, size_t bytes, std::byte** base) {
  if (area.p2pGrowthFreesBlock(bytes)) HCL_TRY(static_cast<GatedStream&>(*stream->impl).synchronizeNative());
  return area.p2pBuffer(bytes, base);
}

// Device stand-ins of `bytes` in `area` for the launch's IPC collectives,
// grown, like pinnedBlock, before anything of the group is issued.
Status reserveIpcStandIns(IpcArea& area, hclStream* stream, size_t bytes) {
  if (area.standInsGrowthFreesBlock(bytes)) HCL_TRY(static_cast<GatedStream&>(*stream->impl).synchronizeNative());
  std::byte* base = nullptr;
  return area.standIns(bytes, &base);
}

// A pre-multiplied sum's scalar in device memory, copied on the stream to
// pinned memory ahead of the launch's chunks: the worker reads it there, as
// a synchronous device copy could wait for the stopped stream.
struct ScalarCopy {
  const void* from;
  std::byte* to;
  size_t bytes;
};

Status scalarsToPinned(Communicator& comm, std::vector<PendingOp>& ops, StagingArea* area,
                       std::vector<ScalarCopy>& out) {
  constexpr size_t kSlot = 64;
  size_t n = 0;
  for (const PendingOp& op : ops) n += op.scalarPointer && comm.device().isDeviceMemory(op.scalarPointer);
  if (n == 0) return {};
  if (!area) return {hclInternalError, "a device scalar in a launch without a staging area"};
  std::byte* base = nullptr;
  HCL_TRY(pinnedBlock(*area, ops.front().stream, n * kSlot, &base));
  for (PendingOp& op : ops) {
    if (!op.scalarPointer || !comm.device().isDeviceMemory(op.scalarPointer)) continue;
    out.push_back({op.scalarPointer, base + out.size() * kSlot, dataTypeSize(op.type)});
    op.scalarPointer = out.back().to;
  }
  return {};
}

// The common launch, collectives of one communicator on one stream: each is
// put on the stream as its staged chunk pipeline (the copies overlap the
// network) or, on an IPC communicator, as the IPC path's steps.
struct PipelinedLaunch {
  std::vector<PendingOp> ops;
  std::vector<ScalarCopy> scalars;
  IpcArea* ipcArea = nullptr;
  std::shared_ptr<std::vector<std::unique_ptr<CommTask>>> tasks;
  Turn turn;
};

void issuePipelined(PipelinedLaunch& l, StreamGate& gate, uint64_t* last) {
  for (const ScalarCopy& c : l.scalars) {
    if (Status s = gate.copyOnStream(c.to, c.bytes, c.from, c.bytes, c.bytes, 1); !s.ok()) {
      PendingOp& first = l.ops.front();
      (first.ipc ? first.ipc->tickets : first.gated->tickets).fail(s.withContext("staging on the stream"));
      return;
    }
  }
  for (PendingOp& op : l.ops) {
    if (op.ipc) {
      issueIpc(*op.comm, *op.ipc, gate, *l.ipcArea, false, last);
      continue;
    }
    op.gated->gate = &gate;
    stageOnStream(*op.gated);
    if (op.gated->tickets.last()) *last = op.gated->tickets.last();
  }
}

Status setUpPipelined(std::vector<PendingOp> ops, LaunchIssue* issue) {
  auto l = std::make_shared<PipelinedLaunch>();
  l->ops = std::move(ops);
  Communicator& comm = *l->ops.front().comm;
  hclStream* stream = l->ops.front().stream;
  StagingArea* area = nullptr;
  size_t ipcStandIns = 0;
  for (PendingOp& op : l->ops) {
    if (takesIpcPath(comm, op)) {
      if (!l->ipcArea) HCL_TRY(comm.ipcAreaFor(stream, &l->ipcArea));
      op.ipc = std::make_shared<IpcCall>(collArgsFor(comm, op), op.spec, op.send, op.recv);
      ipcStandIns = std::max(ipcStandIns, ipcStandInBytes(comm.device(), *op.ipc));
    } else {
      if (!area) HCL_TRY(comm.stagingFor(stream, &area));
      op.gated = std::make_shared<GatedStaging>();
      op.gated->chunks = std::make_unique<StagedChunks>(comm.device(), *area, collArgsFor(comm, op), op.send, op.recv);
    }
  }
  if (l->ipcArea) HCL_TRY(reserveIpcStandIns(*l->ipcArea, stream, ipcStandIns));
  HCL_TRY(scalarsToPinned(comm, l->ops, area, l->scalars));
  l->tasks = std::make_shared<std::vector<std::unique_ptr<CommTask>>>(buildTasks(l->ops));
  l->turn = Turn(comm.issueOrder());
  *issue = [l, stream] {
    auto failTickets = [&l](const Status& s) {
      PendingOp& first = l->ops.front();
      (first.ipc ? first.ipc->tickets : first.gated->tickets).fail(s);
    };
    auto prepare = [&](StreamGate& gate, uint64_t* last) {
      const Status s = noThrow("staging on the stream", [&] {
        issuePipelined(*l, gate, last);
        return Status{};
      });
      if (!s.ok()) failTickets(s);
    };
    auto job = [l, tasks = l->tasks, ipc = l->ops.front().ipc, gated = l->ops.front().gated]() -> Status {
      // The work queued on the stream before the call may take any time:
      // waiting for it is not a stalled peer, so it happens before the
      // executor's watch starts. The gate is set before the first ticket is
      // published.
      uint64_t ticket = 0;
      HCL_TRY((ipc ? ipc->tickets : gated->tickets).waitPublished(0, &ticket));
      HCL_TRY((ipc ? ipc->gate : gated->gate)->waitStart(ticket));
      Communicator& comm = *l->ops.front().comm;
      l->turn.wait(comm.abortFlag(), comm.settings().spinUs);
      const Status s = runTasks(*tasks);
      l->turn.release();
      return s;
    };
    // The job is queued before prepare runs: a throw (out of memory) must
    // reach it as a failure, not leave it waiting for unpublished tickets.
    try {
      static_cast<GatedStream&>(*stream->impl).enqueuePrepared(prepare, std::move(job));
    } catch (const std::exception& e) {
      failTickets({hclSystemError, e.what()});
      throw;
    }
  };
  return {};
}

// The launch as steps in the order the worker runs them: segments of
// operations that run on pinned stand-ins, and collectives on the IPC path,
// one step each.
struct LaunchStep {
  std::vector<PendingOp> ops;  // a segment; empty for an IPC step
  StandIns standIns;
  std::shared_ptr<IpcCall> ipc;
  size_t ticket = 0;  // a segment's ticket, in `tickets`
};

// How the other streams of a launch over several streams are held: NCCL's
// join. The launch's copies all go on the first (lead) stream, after every
// other stream's earlier work, and the other streams' later work waits for
// the launch's last copy.
struct Join {
  size_t followers = 0;
  // [0, followers): a point on each follower; then the lead's start, which
  // the lead waits on until every follower reached its point; then the
  // lead's end, after the last copy back.
  StreamTickets tickets;
  std::mutex mutex;
  std::condition_variable changed;
  bool finished = false;
  Status result;

  void finish(const Status& s) {
    {
      std::lock_guard lock(mutex);
      finished = true;
      result = s;
    }
    changed.notify_all();
  }
  Status awaitFinish() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return finished; });
    return result;
  }
};

struct StandInLaunch {
  explicit StandInLaunch(std::shared_ptr<Communicator> c) : comm(std::move(c)) {}
  std::shared_ptr<Communicator> comm;
  std::vector<LaunchStep> steps;
  StagingArea* area = nullptr;
  IpcArea* ipcArea = nullptr;
  std::byte* base = nullptr;  // the stand-ins, shared by the segments in turn
  size_t standInBytes = 0;
  size_t segments = 0;
  std::vector<GatedStream*> streams;  // the lead's first
  std::vector<StreamGate*> gates;     // theirs; set before the first ticket is published
  StreamTickets tickets;              // one per segment, on the lead
  Join join;
  Turn turn;  // the comm's, taken when the launch is issued
};

// A follower's point, then the lead's start: published before the lead's
// wait is issued.
Status issueJoin(StandInLaunch& l, std::vector<uint64_t>& last) {
  Join& j = l.join;
  for (size_t f = 1; f <= j.followers; ++f) {
    HCL_TRY(l.gates[f]->mark(&last[f]));
    j.tickets.publish(last[f]);
  }
  uint64_t t = 0;
  HCL_TRY(l.gates[0]->mark(&t));
  last[0] = t;
  j.tickets.publish(t);
  return l.gates[0]->waitFor(t);
}

// Each follower waits at its point until the lead's end has passed; its
// waits are issued after everything of the lead's, so that a device whose
// streams share one hardware queue still runs the lead's copies.
Status issueRelease(StandInLaunch& l, std::vector<uint64_t>& last) {
  Join& j = l.join;
  HCL_TRY(l.gates[0]->mark(&last[0]));
  j.tickets.publish(last[0]);
  for (size_t f = 1; f <= j.followers; ++f) HCL_TRY(l.gates[f]->waitFor(last[f]));
  return {};
}

// The streams' side, in the calling thread, in step order. A segment: copy
// its device inputs to the stand-ins, mark a ticket (the worker may run the
// segment once the stream reaches it), wait for its release, copy the
// outputs back. The next segment's copies in follow the last one's copies
// back on the stream, so the segments can share the stand-ins.
Status issueSteps(StandInLaunch& l, std::vector<uint64_t>& last) {
  StreamGate& gate = *l.gates[0];
  l.tickets.reserve(std::max<size_t>(l.segments, 1));
  l.join.tickets.reserve(l.join.followers + 2);
  if (l.join.followers > 0) HCL_TRY(issueJoin(l, last));
  for (LaunchStep& step : l.steps) {
    if (step.ipc) {
      issueIpc(*l.comm, *step.ipc, gate, *l.ipcArea, false, &last[0]);
      continue;
    }
    for (const StandIns::Range& r : step.standIns.ranges) {
      if (r.copyIn) HCL_TRY(gate.copyOnStream(l.base + r.offset, r.bytes, r.start, r.bytes, r.bytes, 1));
    }
    uint64_t t = 0;
    HCL_TRY(gate.mark(&t));
    last[0] = t;
    // Published before the wait is issued: with the stream's command queue
    // full, issuing the wait blocks until the stream moves.
    l.tickets.publish(t);
    HCL_TRY(gate.waitFor(t));
    for (const StandIns::Range& r : step.standIns.ranges) {
      if (r.copyOut) HCL_TRY(gate.copyOnStream(r.start, r.bytes, l.base + r.offset, r.bytes, r.bytes, 1));
    }
  }
  if (l.join.followers > 0) HCL_TRY(issueRelease(l, last));
  return {};
}

Status runSegment(StandInLaunch& l, const LaunchStep& step) {
  uint64_t t = 0;
  HCL_TRY(l.tickets.waitPublished(step.ticket, &t));
  Status s = l.gates[0]->waitStart(t);
  if (s.ok()) {
    auto ops = onStandIns(step.ops, step.standIns, l.base);
    auto tasks = buildTasks(ops);
    s = runTasks(tasks);
  }
  l.gates[0]->release(t);
  return s;
}

// The work queued on the streams before the launch may take any time:
// waiting for it is not a stalled peer, so it happens before the executor's
// watch starts.
Status awaitStart(StandInLaunch& l) {
  Join& j = l.join;
  uint64_t t = 0;
  if (j.followers > 0) {
    for (size_t f = 0; f <= j.followers; ++f) {
      HCL_TRY(j.tickets.waitPublished(f, &t));
      HCL_TRY(l.gates[f == j.followers ? 0 : f + 1]->waitStart(t));
    }
    l.gates[0]->release(t);
    return {};
  }
  const LaunchStep& first = l.steps.front();
  if (first.ipc) {
    HCL_TRY(first.ipc->tickets.waitPublished(0, &t));
    return first.ipc->gate->waitStart(t);
  }
  HCL_TRY(l.tickets.waitPublished(0, &t));
  return l.gates[0]->waitStart(t);
}

// The lead's worker: the steps in order.
Status runSteps(StandInLaunch& l) {
  HCL_TRY(awaitStart(l));
  l.turn.wait(l.comm->abortFlag(), l.comm->settings().spinUs);
  for (const LaunchStep& step : l.steps) {
    Status s;
    if (step.ipc) {
      std::vector<PendingOp> one(1);
      one[0].call = "hclGroupEnd";
      one[0].comm = l.comm;
      one[0].kind = step.ipc->args.kind;
      one[0].ipc = step.ipc;
      auto tasks = buildTasks(one);
      s = runTasks(tasks);
    } else {
      s = runSegment(l, step);
    }
    HCL_TRY(s);
  }
  if (l.join.followers > 0) {
    // The followers go on once the lead's copies back are done.
    uint64_t t = 0;
    HCL_TRY(l.join.tickets.waitPublished(l.join.followers + 1, &t));
    HCL_TRY(l.gates[0]->waitStart(t));
  }
  return {};
}

Status runLead(StandInLaunch& l) {
  Status s = runSteps(l);
  // Peers must not wait for the steps that did not run; and the next
  // operation, free to start once the turn is released, must find the
  // communicator failed rather than post to links being aborted.
  if (!s.ok()) l.comm->fail(s);
  l.turn.release();
  l.join.finish(s);
  return s;
}

// Send/recv, alone or mixed with collectives, of one communicator, on one
// stream or several. In the order every path runs a communicator's launch
// (its send/recv first, then its collectives in call order), consecutive
// operations not on the IPC path form a segment that runs on pinned
// stand-ins of its device buffers, as host operations; collectives on the
// IPC path run as themselves between segments. The streams do every copy;
// they do not overlap the network, but the worker touches no device queue.
Status setUpOnStandIns(std::vector<PendingOp> ops, LaunchIssue* issue) {
  auto l = std::make_shared<StandInLaunch>(ops.front().comm);
  Communicator& comm = *l->comm;
  for (const PendingOp& op : ops) {
    auto* s = static_cast<GatedStream*>(op.stream->impl.get());
    if (std::find(l->streams.begin(), l->streams.end(), s) == l->streams.end()) l->streams.push_back(s);
  }
  l->join.followers = l->streams.size() - 1;
  hclStream* lead = ops.front().stream;
  std::stable_partition(ops.begin(), ops.end(), [](const PendingOp& op) { return op.kind == CollKind::SendRecv; });
  for (PendingOp& op : ops) {
    if (op.kind != CollKind::SendRecv && takesIpcPath(comm, op)) {
      if (!l->ipcArea) HCL_TRY(comm.ipcAreaFor(lead, &l->ipcArea));
      LaunchStep step;
      step.ipc = std::make_shared<IpcCall>(collArgsFor(comm, op), op.spec, op.send, op.recv);
      l->steps.push_back(std::move(step));
      continue;
    }
    if (l->steps.empty() || l->steps.back().ipc) {
      LaunchStep step;
      step.ticket = l->segments++;
      l->steps.push_back(std::move(step));
    }
    l->steps.back().ops.push_back(std::move(op));
  }
  size_t ipcStandIns = 0;
  for (LaunchStep& step : l->steps) {
    if (step.ipc) {
      ipcStandIns = std::max(ipcStandIns, ipcStandInBytes(comm.device(), *step.ipc));
      continue;
    }
    step.standIns = standInsFor(comm.device(), step.ops);
    l->standInBytes = std::max(l->standInBytes, step.standIns.bytes);
  }
  if (l->segments > 0) HCL_TRY(comm.stagingFor(lead, &l->area));
  if (l->standInBytes > 0) HCL_TRY(pinnedBlock(*l->area, lead, l->standInBytes, &l->base));
  if (l->ipcArea) HCL_TRY(reserveIpcStandIns(*l->ipcArea, lead, ipcStandIns));
  l->turn = Turn(comm.issueOrder());
  *issue = [l] {
    std::vector<std::function<Status()>> jobs;
    jobs.push_back([l]() -> Status { return runLead(*l); });
    for (size_t f = 0; f < l->join.followers; ++f) jobs.push_back([l]() -> Status { return l->join.awaitFinish(); });
    auto failTickets = [&l](const Status& s) {
      const Status why = s.withContext("staging on the stream");
      l->tickets.fail(why);
      l->join.tickets.fail(why);
      for (LaunchStep& step : l->steps) {
        if (step.ipc) step.ipc->tickets.fail(why);
      }
    };
    // Jobs may be queued before anything throws (out of memory): they must
    // see a failure, not wait for tickets that are never published.
    try {
      GatedStream::enqueueJoined(
          l->streams,
          [&](const std::vector<StreamGate*>& gates, std::vector<uint64_t>& last) {
            l->gates = gates;
            if (Status s = noThrow("staging on the stream", [&] { return issueSteps(*l, last); }); !s.ok())
              failTickets(s);
          },
          std::move(jobs));
    } catch (const std::exception& e) {
      failTickets({hclSystemError, e.what()});
      throw;
    }
  };
  return {};
}

}  // namespace

bool onDeviceStreams(const std::vector<PendingOp>& ops) {
  if (ops.empty()) return false;
  std::vector<const Communicator*> comms;
  for (const PendingOp& op : ops) {
    if (!op.stream || !dynamic_cast<GatedStream*>(op.stream->impl.get())) return false;
    if (std::find(comms.begin(), comms.end(), op.comm.get()) != comms.end()) continue;
    // Several ranks of one communicator driven from one thread must run at
    // once, which launches one after the other would not.
    for (const Communicator* seen : comms) {
      if (seen->commTag() == op.comm->commTag()) return false;
    }
    comms.push_back(op.comm.get());
  }
  return true;
}

Status launchOnDeviceStreams(std::vector<PendingOp> ops) {
  // One launch per communicator, in the order of each one's first call.
  std::vector<std::vector<PendingOp>> byComm;
  for (PendingOp& op : ops) {
    auto same = [&](const std::vector<PendingOp>& part) { return part.front().comm == op.comm; };
    auto part = std::find_if(byComm.begin(), byComm.end(), same);
    if (part == byComm.end()) {
      byComm.emplace_back();
      part = byComm.end() - 1;
    }
    part->push_back(std::move(op));
  }
  // Everything that may fail or wait is set up before any part is issued,
  // so a group is put on its streams whole or not at all, and waiting for
  // earlier launches never waits for a part of this one.
  std::vector<LaunchIssue> issues(byComm.size());
  for (size_t i = 0; i < byComm.size(); ++i) {
    if (pipelinesOnStream(byComm[i])) {
      HCL_TRY(setUpPipelined(std::move(byComm[i]), &issues[i]));
    } else {
      HCL_TRY(setUpOnStandIns(std::move(byComm[i]), &issues[i]));
    }
  }
  for (LaunchIssue& issue : issues) issue();
  return {};
}

}  // namespace hcl
