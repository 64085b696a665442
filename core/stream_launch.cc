#include "core/stream_launch.h"

#include <algorithm>
#include <span>

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

// Where the device buffers of a stream's operations stand in pinned memory:
// whole buffers, laid end to end. `in` is copied there before the
// operations run, `out` back after.
struct StandIns {
  static constexpr size_t kUser = SIZE_MAX;
  struct Copy {
    void* user;
    size_t offset, bytes;
  };
  std::vector<Copy> in, out;
  std::vector<size_t> send, recv;  // per operation: its stand-ins' offsets, or kUser
  size_t bytes = 0;
};

StandIns standInsFor(const std::vector<const PendingOp*>& ops) {
  StandIns g;
  auto place = [&](Device& device, const void* user, size_t bytes) -> size_t {
    if (bytes == 0 || !device.isDeviceMemory(user)) return StandIns::kUser;
    const size_t offset = g.bytes;
    g.bytes += (bytes + 63) / 64 * 64;
    return offset;
  };
  for (const PendingOp* op : ops) {
    Communicator& comm = *op->comm;
    Device& device = comm.device();
    const size_t elem = dataTypeSize(op->type);
    size_t inBytes = 0, outBytes = 0;
    if (op->kind == CollKind::SendRecv) {
      (op->isSend ? inBytes : outBytes) = op->count * elem;
    } else {
      const StageLayout l = stageLayout(op->kind, comm.rank(), comm.nranks(), op->root);
      inBytes = l.readsInput ? l.inBlocks * op->count * elem : 0;
      outBytes = l.writesOutput ? l.outBlocks * op->count * elem : 0;
    }
    size_t send = StandIns::kUser, recv = StandIns::kUser;
    if (op->kind != CollKind::SendRecv && op->send == op->recv) {  // in place: one stand-in
      send = recv = place(device, op->recv, std::max(inBytes, outBytes));
    } else {
      if (op->kind != CollKind::SendRecv || op->isSend) send = place(device, op->send, inBytes);
      if (op->kind != CollKind::SendRecv || !op->isSend) recv = place(device, op->recv, outBytes);
    }
    if (send != StandIns::kUser && inBytes > 0) g.in.push_back({const_cast<void*>(op->send), send, inBytes});
    if (recv != StandIns::kUser && outBytes > 0) g.out.push_back({op->recv, recv, outBytes});
    g.send.push_back(send);
    g.recv.push_back(recv);
  }
  return g;
}

// One stream's share of a launch.
struct StreamPart {
  explicit StreamPart(hclStream* h) : handle(h), stream(static_cast<GatedStream*>(h->impl.get())) {}
  hclStream* handle;
  GatedStream* stream;
  std::vector<const PendingOp*> onStandIns;  // in call order
  StandIns standIns;
  StagingArea* area = nullptr;
  std::byte* base = nullptr;  // the pinned block of stand-ins
  StreamGate* gate = nullptr;
  StreamTickets ticket;  // one: the inputs are in; base and gate are set before it is published
};

struct DeviceStreamLaunch {
  std::vector<PendingOp> ops;
  std::vector<std::unique_ptr<StreamPart>> parts;  // in the order the streams first appear
  std::vector<size_t> partOf;                      // per operation
  std::vector<size_t> slotOf;                      // per operation on stand-ins: its index in its part
  StreamTickets outputsIssued;                     // the copies back are on the streams
  bool anyIpc = false;
};

// Each step over all streams before the next, so that a launch over several
// streams (or several HCL streams wrapping one native stream) never has a
// stream wait for a ticket that is only issued behind another wait:
//   1. copy the device inputs to the stand-ins        (every stream)
//   2. mark each stream's ticket                      (every stream)
//   3. wait for it, and publish it to the worker      (every stream)
//   4. copy the device outputs back                   (every stream)
//   5. the IPC path's steps, in call order
// A failure before step 5 fails every ticket not yet published and leaves
// the IPC steps out: no segment table is taken that no run would give back.
void issueOnStreams(DeviceStreamLaunch& l, std::span<StreamGate* const> gates, std::span<uint64_t> last) {
  const size_t n = l.parts.size();
  Status failure;
  auto failAll = [&] {
    for (auto& p : l.parts) p->ticket.fail(failure);
    l.outputsIssued.fail(failure);
  };
  l.outputsIssued.reserve(1);
  for (size_t i = 0; i < n && failure.ok(); ++i) {
    StreamPart& p = *l.parts[i];
    p.gate = gates[i];
    p.ticket.reserve(1);
    if (p.standIns.bytes > 0) {
      // Growing frees the old stand-ins, which earlier calls' copies on this
      // stream may still read: let them finish first.
      if (!p.area->p2pFits(p.standIns.bytes)) failure = p.gate->synchronize();
      if (failure.ok()) failure = p.area->p2pBuffer(p.standIns.bytes, &p.base);
    }
    for (const StandIns::Copy& c : p.standIns.in) {
      if (failure.ok()) failure = p.gate->copyOnStream(p.base + c.offset, c.bytes, c.user, c.bytes, c.bytes, 1);
    }
  }
  for (size_t i = 0; i < n && failure.ok(); ++i) {
    failure = gates[i]->mark(&last[i]);
  }
  for (size_t i = 0; i < n && failure.ok(); ++i) {
    failure = gates[i]->waitFor(last[i]);
    if (failure.ok()) l.parts[i]->ticket.publish(last[i]);
  }
  for (size_t i = 0; i < n && failure.ok(); ++i) {
    const StreamPart& p = *l.parts[i];
    for (const StandIns::Copy& c : p.standIns.out) {
      if (failure.ok()) failure = p.gate->copyOnStream(c.user, c.bytes, p.base + c.offset, c.bytes, c.bytes, 1);
    }
  }
  if (!failure.ok()) {
    failure = failure.withContext("staging on the stream");
    failAll();
    return;
  }
  l.outputsIssued.publish(1);
  for (size_t k = 0; k < l.ops.size(); ++k) {
    PendingOp& op = l.ops[k];
    if (!op.ipc) continue;
    const size_t i = l.partOf[k];
    IpcArea* area = nullptr;
    if (Status s = op.comm->ipcAreaFor(op.stream, &area); !s.ok()) {
      op.ipc->tickets.fail(s);
      continue;
    }
    issueIpc(*op.comm, *op.ipc, *gates[i], *area, false, &last[i]);
  }
}

// The worker's side: once every stream has its inputs in, the operations
// on stand-ins run as host operations; the streams may then copy their
// outputs back, and the IPC-path collectives run.
Status runOnStandInsThenIpc(DeviceStreamLaunch& l) {
  // The work queued on the streams before the launch may take any time:
  // waiting for it is not a stalled peer, so it happens before the
  // executor's watch starts.
  for (auto& p : l.parts) {
    uint64_t t = 0;
    HCL_TRY(p->ticket.waitPublished(0, &t));
    HCL_TRY(p->gate->waitStart(t));
  }
  std::vector<PendingOp> hostOps;
  for (size_t k = 0; k < l.ops.size(); ++k) {
    if (l.ops[k].ipc) continue;
    PendingOp op = l.ops[k];
    const StreamPart& p = *l.parts[l.partOf[k]];
    const size_t slot = l.slotOf[k];
    op.stream = nullptr;
    if (p.standIns.send[slot] != StandIns::kUser) op.send = p.base + p.standIns.send[slot];
    if (p.standIns.recv[slot] != StandIns::kUser) op.recv = p.base + p.standIns.recv[slot];
    hostOps.push_back(std::move(op));
  }
  Status s;
  if (!hostOps.empty()) {
    auto tasks = buildTasks(hostOps);
    s = runTasks(tasks);
  }
  for (auto& p : l.parts) {
    uint64_t t = 0;
    bool ready = false;
    if (p->ticket.get(0, &t, &ready).ok() && ready) p->gate->release(t);
  }
  uint64_t issued = 0;
  if (Status out = l.outputsIssued.waitPublished(0, &issued); !out.ok()) return s.ok() ? out : s;
  if (!l.anyIpc) return s;
  // Also after a failure, since the IPC steps are on the streams already: a
  // failed communicator's runs fail at once, another communicator's run as
  // they would alone.
  std::vector<PendingOp> ipcOps;
  for (const PendingOp& op : l.ops) {
    if (op.ipc) ipcOps.push_back(op);
  }
  auto tasks = buildTasks(ipcOps);
  Status ipc = runTasks(tasks);
  return s.ok() ? ipc : s;
}

// Any launch on device-runtime streams: several streams or communicators,
// send/recv mixed with collectives, collectives on the IPC path. The device
// inputs of the operations not on the IPC path are copied whole to pinned
// stand-ins on their streams, and the worker runs those operations on the
// stand-ins as host operations; nothing overlaps those copies, but the
// worker touches no device queue.
Status launchOnStandIns(std::vector<PendingOp> ops) {
  auto l = std::make_shared<DeviceStreamLaunch>();
  l->ops = std::move(ops);
  for (PendingOp& op : l->ops) {
    auto it = std::find_if(l->parts.begin(), l->parts.end(), [&](const auto& p) { return p->handle == op.stream; });
    if (it == l->parts.end()) {
      l->parts.push_back(std::make_unique<StreamPart>(op.stream));
      it = l->parts.end() - 1;
    }
    l->partOf.push_back(static_cast<size_t>(it - l->parts.begin()));
    StreamPart& p = **it;
    if (op.kind != CollKind::SendRecv && takesIpcPath(*op.comm, op)) {
      op.ipc = std::make_shared<IpcCall>(collArgsFor(*op.comm, op), op.spec, op.send, op.recv);
      l->anyIpc = true;
      l->slotOf.push_back(0);
      continue;
    }
    if (!p.area) HCL_TRY(op.comm->stagingFor(op.stream, &p.area));
    l->slotOf.push_back(p.onStandIns.size());
    p.onStandIns.push_back(&op);
  }
  for (auto& p : l->parts) p->standIns = standInsFor(p->onStandIns);
  std::vector<GatedStream*> streams;
  for (auto& p : l->parts) streams.push_back(p->stream);
  GatedStream::enqueuePrepared(
      streams, [&](std::span<StreamGate* const> gates, std::span<uint64_t> last) { issueOnStreams(*l, gates, last); },
      [l]() -> Status { return runOnStandInsThenIpc(*l); });
  return {};
}

}  // namespace

bool onDeviceStreams(const std::vector<PendingOp>& ops) {
  for (const PendingOp& op : ops) {
    if (!op.stream || !dynamic_cast<GatedStream*>(op.stream->impl.get())) return false;
  }
  return !ops.empty();
}

Status launchOnDeviceStreams(std::vector<PendingOp> ops) {
  if (pipelinesOnStream(ops)) return launchPipelined(std::move(ops));
  return launchOnStandIns(std::move(ops));
}

}  // namespace hcl
