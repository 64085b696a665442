#include "core/stream_launch.h"

#include <algorithm>

#include "core/group_tasks.h"
#include "core/ipc_run.h"
#include "core/staged_layout.h"
#include "core/staged_run.h"
#include "device/gated_stream.h"

namespace hcl {
namespace {

// Whether a launch's collectives can be put on its device-runtime stream as
// their chunk pipelines: staged collectives of one communicator (so that the
// worker finishes their chunks, and releases their tickets, in the order
// they were issued).
bool pipelinesOnStream(const std::vector<PendingOp>& ops) {
  for (const PendingOp& op : ops) {
    if (op.comm != ops.front().comm || op.stream != ops.front().stream || !op.stream) return false;
    if (op.kind == CollKind::SendRecv || !op.comm->staged() || op.count == 0) return false;
  }
  return true;
}

// The common launch, collectives of one communicator on one stream: each is
// put on the stream as its staged chunk pipeline (the copies overlap the
// network) or, on an IPC communicator, as the IPC path's steps.
Status launchPipelined(std::vector<PendingOp> ops) {
  Communicator& comm = *ops.front().comm;
  auto& stream = static_cast<GatedStream&>(*ops.front().stream->impl);
  StagingArea* area = nullptr;
  IpcArea* ipcArea = nullptr;
  for (PendingOp& op : ops) {
    if (takesIpcPath(comm, op)) {
      if (!ipcArea) HCL_TRY(comm.ipcAreaFor(ops.front().stream, &ipcArea));
      op.ipc = std::make_shared<IpcCall>(collArgsFor(comm, op), op.spec, op.send, op.recv);
    } else {
      if (!area) HCL_TRY(comm.stagingFor(ops.front().stream, &area));
      op.gated = std::make_shared<GatedStaging>();
      op.gated->chunks = std::make_unique<StagedChunks>(comm.device(), *area, collArgsFor(comm, op), op.send, op.recv);
    }
  }
  auto tasks = std::make_shared<std::vector<std::unique_ptr<CommTask>>>(buildTasks(ops));
  stream.enqueuePrepared(
      [&](StreamGate& gate, uint64_t* last) {
        for (PendingOp& op : ops) {
          if (op.ipc) {
            issueIpc(comm, *op.ipc, gate, *ipcArea, false, last);
            continue;
          }
          op.gated->gate = &gate;
          stageOnStream(*op.gated);
          if (op.gated->tickets.last()) *last = op.gated->tickets.last();
        }
      },
      [tasks, ipc = ops.front().ipc, gated = ops.front().gated]() -> Status {
        // The work queued on the stream before the call may take any time:
        // waiting for it is not a stalled peer, so it happens before the
        // executor's watch starts. The gate is set before the first ticket
        // is published.
        uint64_t ticket = 0;
        HCL_TRY((ipc ? ipc->tickets : gated->tickets).waitPublished(0, &ticket));
        HCL_TRY((ipc ? ipc->gate : gated->gate)->waitStart(ticket));
        return runTasks(*tasks);
      });
  return {};
}

// Where a segment's device buffers stand in pinned memory. Buffers that
// overlap share one stand-in, so an operation that reads what an earlier one
// of the segment wrote sees it, as it would on the device.
struct StandIns {
  struct Range {
    std::byte* start;
    size_t bytes;
    size_t offset;  // in the block
    bool copyIn, copyOut;
  };
  std::vector<Range> ranges;
  size_t bytes = 0;
  // The stand-in of `user` (device memory inside one of the ranges).
  std::byte* at(std::byte* base, const void* user) const {
    const auto* p = static_cast<const std::byte*>(user);
    for (const Range& r : ranges) {
      if (p >= r.start && p < r.start + r.bytes) return base + r.offset + static_cast<size_t>(p - r.start);
    }
    return nullptr;
  }
};

// Each operation's device buffers, as byte ranges read and written.
StandIns standInsFor(Communicator& comm, const std::vector<PendingOp>& ops) {
  struct Use {
    std::byte* start;
    size_t bytes;
    bool read;
  };
  std::vector<Use> uses;
  Device& device = comm.device();
  auto use = [&](const void* p, size_t bytes, bool read) {
    if (bytes > 0 && device.isDeviceMemory(p)) uses.push_back({static_cast<std::byte*>(const_cast<void*>(p)), bytes, read});
  };
  for (const PendingOp& op : ops) {
    const size_t elem = dataTypeSize(op.type);
    if (op.kind == CollKind::SendRecv) {
      use(op.isSend ? op.send : op.recv, op.count * elem, op.isSend);
      continue;
    }
    const StageLayout l = stageLayout(op.kind, comm.rank(), comm.nranks(), op.root);
    if (l.readsInput) use(op.send, l.inBlocks * op.count * elem, true);
    if (l.writesOutput) use(op.recv, l.outBlocks * op.count * elem, false);
    if (op.scalarPointer) use(op.scalarPointer, elem, true);
  }
  std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.start < b.start; });
  StandIns g;
  for (size_t i = 0; i < uses.size();) {
    StandIns::Range r{uses[i].start, uses[i].bytes, g.bytes, false, false};
    size_t written = 0;  // ranges written, and whether one covers all of r
    bool oneWriteCoversAll = false;
    for (; i < uses.size() && uses[i].start < r.start + r.bytes; ++i) {
      const Use& u = uses[i];
      r.bytes = std::max(r.bytes, static_cast<size_t>(u.start + u.bytes - r.start));
      if (u.read) r.copyIn = true;
      if (!u.read) {
        ++written;
        r.copyOut = true;
        oneWriteCoversAll = u.start == r.start && u.bytes == r.bytes;
      }
    }
    // What no operation writes whole must keep its contents through the copy back.
    if (r.copyOut && !(written == 1 && oneWriteCoversAll)) r.copyIn = true;
    g.bytes += (r.bytes + 63) / 64 * 64;
    g.ranges.push_back(r);
  }
  return g;
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

struct StandInLaunch {
  explicit StandInLaunch(std::shared_ptr<Communicator> c) : comm(std::move(c)) {}
  std::shared_ptr<Communicator> comm;
  std::vector<LaunchStep> steps;
  StagingArea* area = nullptr;
  IpcArea* ipcArea = nullptr;
  std::byte* base = nullptr;  // the stand-ins, shared by the segments in turn
  size_t standInBytes = 0;
  size_t segments = 0;
  StreamGate* gate = nullptr;
  StreamTickets tickets;  // one per segment; base and gate are set before the first is published
};

// The stream's side, in the calling thread, in step order. A segment: copy
// its device inputs to the stand-ins, mark a ticket (the worker may run the
// segment once the stream reaches it), wait for its release, copy the
// outputs back. The next segment's copies in follow the last one's copies
// back on the stream, so the segments can share the stand-ins.
Status issueSteps(StandInLaunch& l, StreamGate& gate, uint64_t* last) {
  l.gate = &gate;
  l.tickets.reserve(std::max<size_t>(l.segments, 1));
  if (l.standInBytes > 0) {
    // Growing frees the old stand-ins, which earlier calls' copies on this
    // stream may still read: let them finish first.
    if (!l.area->p2pFits(l.standInBytes)) HCL_TRY(gate.synchronize());
    HCL_TRY(l.area->p2pBuffer(l.standInBytes, &l.base));
  }
  for (LaunchStep& step : l.steps) {
    if (step.ipc) {
      issueIpc(*l.comm, *step.ipc, gate, *l.ipcArea, false, last);
      continue;
    }
    for (const StandIns::Range& r : step.standIns.ranges) {
      if (r.copyIn) HCL_TRY(gate.copyOnStream(l.base + r.offset, r.bytes, r.start, r.bytes, r.bytes, 1));
    }
    uint64_t t = 0;
    HCL_TRY(gate.mark(&t));
    *last = t;
    // Published before the wait is issued: with the stream's command queue
    // full, issuing the wait blocks until the stream moves.
    l.tickets.publish(t);
    HCL_TRY(gate.waitFor(t));
    for (const StandIns::Range& r : step.standIns.ranges) {
      if (r.copyOut) HCL_TRY(gate.copyOnStream(r.start, r.bytes, l.base + r.offset, r.bytes, r.bytes, 1));
    }
  }
  return {};
}

Status runSegment(StandInLaunch& l, const LaunchStep& step) {
  uint64_t t = 0;
  HCL_TRY(l.tickets.waitPublished(step.ticket, &t));
  Status s = l.gate->waitStart(t);
  if (s.ok()) {
    std::vector<PendingOp> ops = step.ops;
    for (PendingOp& op : ops) {
      op.stream = nullptr;
      if (std::byte* p = step.standIns.at(l.base, op.send)) op.send = p;
      if (std::byte* p = step.standIns.at(l.base, op.recv)) op.recv = p;
      if (op.scalarPointer) {
        if (std::byte* p = step.standIns.at(l.base, op.scalarPointer)) op.scalarPointer = p;
      }
    }
    auto tasks = buildTasks(ops);
    s = runTasks(tasks);
  }
  l.gate->release(t);
  return s;
}

// The worker's side: the steps in order.
Status runSteps(StandInLaunch& l) {
  // The work queued on the stream before the launch may take any time:
  // waiting for it is not a stalled peer, so it happens before the
  // executor's watch starts.
  const LaunchStep& first = l.steps.front();
  uint64_t t = 0;
  if (first.ipc) {
    HCL_TRY(first.ipc->tickets.waitPublished(0, &t));
    HCL_TRY(first.ipc->gate->waitStart(t));
  } else {
    HCL_TRY(l.tickets.waitPublished(0, &t));
    HCL_TRY(l.gate->waitStart(t));
  }
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
    if (!s.ok()) {
      // The later steps do not run: peers must not wait for them.
      l.comm->fail(s);
      return s;
    }
  }
  return {};
}

// Send/recv, alone or mixed with collectives, of one communicator on one
// stream. In the order every path runs a communicator's launch (its
// send/recv first, then its collectives in call order), consecutive
// operations not on the IPC path form a segment that runs on pinned
// stand-ins of its device buffers, as host operations; collectives on the
// IPC path run as themselves between segments. The stream does every copy;
// they do not overlap the network, but the worker touches no device queue.
Status launchOnStandIns(std::vector<PendingOp> ops) {
  auto l = std::make_shared<StandInLaunch>(ops.front().comm);
  Communicator& comm = *l->comm;
  hclStream* stream = ops.front().stream;
  std::stable_partition(ops.begin(), ops.end(), [](const PendingOp& op) { return op.kind == CollKind::SendRecv; });
  for (PendingOp& op : ops) {
    if (op.kind != CollKind::SendRecv && takesIpcPath(comm, op)) {
      if (!l->ipcArea) HCL_TRY(comm.ipcAreaFor(stream, &l->ipcArea));
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
  for (LaunchStep& step : l->steps) {
    if (step.ipc) continue;
    step.standIns = standInsFor(comm, step.ops);
    l->standInBytes = std::max(l->standInBytes, step.standIns.bytes);
  }
  if (l->segments > 0) HCL_TRY(comm.stagingFor(stream, &l->area));
  auto& gated = static_cast<GatedStream&>(*stream->impl);
  gated.enqueuePrepared(
      [&](StreamGate& gate, uint64_t* last) {
        if (Status s = issueSteps(*l, gate, last); !s.ok()) {
          const Status why = s.withContext("staging on the stream");
          l->tickets.fail(why);
          for (LaunchStep& step : l->steps) {
            if (step.ipc) step.ipc->tickets.fail(why);
          }
        }
      },
      [l]() -> Status { return runSteps(*l); });
  return {};
}

}  // namespace

bool onDeviceStream(const std::vector<PendingOp>& ops) {
  if (ops.empty() || !ops.front().stream || !dynamic_cast<GatedStream*>(ops.front().stream->impl.get())) return false;
  for (const PendingOp& op : ops) {
    if (op.comm != ops.front().comm || op.stream != ops.front().stream) return false;
  }
  return true;
}

Status launchOnDeviceStream(std::vector<PendingOp> ops) {
  if (pipelinesOnStream(ops)) return launchPipelined(std::move(ops));
  return launchOnStandIns(std::move(ops));
}

}  // namespace hcl
