#include "core/group.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "collectives/algorithms/p2p.h"
#include "core/executor.h"
#include "core/ipc_run.h"
#include "core/staged_layout.h"
#include "core/staged_run.h"
#include "device/gated_stream.h"

namespace hcl {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<PendingOp> ops;
  std::vector<std::function<Status()>> inits;
};

// NCCL's groups are per thread.
thread_local GroupState tlsGroup;

CollArgs collArgsFor(Communicator& comm, const PendingOp& op) {
  CollArgs args;
  args.kind = op.kind;
  args.rank = comm.rank();
  args.nranks = comm.nranks();
  args.count = op.count;
  args.type = op.type;
  args.loadIsIdentity =
      accumulatorSize(op.type) == dataTypeSize(op.type) && op.spec.kind != ReduceKind::PreMulSum;
  args.rankDependentLoad = op.spec.kind == ReduceKind::PreMulSum;
  args.root = op.root;
  args.inPlace = op.send == op.recv;
  args.chunkBytes = comm.settings().chunkBytes;
  return args;
}

// Every rank decides alike: from the communicator and the call's shared arguments.
bool takesIpcPath(const Communicator& comm, const PendingOp& op) {
  return comm.ipc() && ipcServes(op.kind, op.count, op.spec.kind);
}

Status makeCollectiveRun(Communicator& comm, const PendingOp& op, RunSlot& out) {
  ReduceSpec spec = op.spec;
  if (op.scalarPointer) {
    // A scalar in device memory (hclScalarDevice on a GPU) is read through the device.
    uint64_t scalar = 0;
    const void* from = op.scalarPointer;
    if (comm.device().isDeviceMemory(from)) {
      HCL_TRY(comm.device().copy(&scalar, from, dataTypeSize(op.type)));
      from = &scalar;
    }
    readScalar(op.type, from, spec.scalarFloat, spec.scalarInt, spec.scalarUint);
  }
  if (op.gated) {
    out.set(std::make_unique<GatedStagedRun>(comm, op.gated, spec));
    return {};
  }
  if (op.ipc) {
    out.set(std::make_unique<IpcRun>(comm, op.ipc));
    return {};
  }
  const CollArgs args = collArgsFor(comm, op);
  if (takesIpcPath(comm, op)) {
    // Without a device-runtime stream: the run puts its stream side on a
    // stream of HCL's own.
    IpcArea* area = nullptr;
    HCL_TRY(comm.ipcAreaFor(nullptr, &area));
    out.set(std::make_unique<IpcRun>(comm, std::make_shared<IpcCall>(args, spec, op.send, op.recv), area));
    return {};
  }
  if (comm.staged() && op.count > 0) {
    StagingArea* area = nullptr;
    HCL_TRY(comm.staging(&area));
    out.set(std::make_unique<StagedRun>(comm, *area, args, op.send, op.recv, spec));
    return {};
  }
  out.emplaceSchedule(comm, comm.schedule(args), RunBuffers{op.send, op.recv, {}}, spec);
  return {};
}

CommTask::Maker collectiveMaker(PendingOp op) {
  return [op = std::move(op)](RunSlot& out) { return makeCollectiveRun(*op.comm, op, out); };
}

// A launch's point-to-point calls as transfers. Device buffers get pinned
// stand-ins, laid end to end in one block; host buffers are used as they are.
struct P2PLayout {
  static constexpr size_t kHost = SIZE_MAX;
  std::vector<P2PCall> calls;
  std::vector<void*> user;      // each call's own buffer
  std::vector<size_t> standIn;  // its stand-in's offset in the block, or kHost
  size_t standInBytes = 0;
};

P2PLayout p2pLayout(Communicator& comm, const std::vector<PendingOp>& ops) {
  P2PLayout l;
  for (const PendingOp& op : ops) {
    P2PCall c;
    c.isSend = op.isSend;
    c.peer = op.root;
    c.bytes = op.count * dataTypeSize(op.type);
    c.buffer = static_cast<uint32_t>(l.user.size());
    void* user = op.isSend ? const_cast<void*>(op.send) : op.recv;
    if (c.bytes > 0 && comm.device().isDeviceMemory(user)) {
      l.standIn.push_back(l.standInBytes);
      l.standInBytes += (c.bytes + 63) / 64 * 64;
    } else {
      l.standIn.push_back(P2PLayout::kHost);
    }
    l.user.push_back(user);
    l.calls.push_back(c);
  }
  return l;
}

// The buffers the transfers use, with the stand-in block at `base`.
RunBuffers p2pBuffers(const P2PLayout& l, std::byte* base) {
  RunBuffers buffers;
  for (size_t i = 0; i < l.calls.size(); ++i) {
    buffers.user.push_back(l.standIn[i] == P2PLayout::kHost ? l.user[i] : base + l.standIn[i]);
  }
  return buffers;
}

Status p2pScheduleFor(Communicator& comm, const P2PLayout& l, Schedule& schedule) {
  std::string error;
  if (!p2pSchedule(l.calls, comm.rank(), schedule, error)) return invalidUsage(error);
  return {};
}

CommTask::Maker p2pMaker(std::vector<PendingOp> ops) {
  return [ops = std::move(ops)](RunSlot& out) -> Status {
    Communicator& comm = *ops.front().comm;
    const P2PLayout layout = p2pLayout(comm, ops);
    Schedule schedule;
    HCL_TRY(p2pScheduleFor(comm, layout, schedule));
    if (layout.standInBytes == 0) {
      out.emplaceSchedule(comm, std::move(schedule), p2pBuffers(layout, nullptr), ReduceSpec{});
      return {};
    }
    StagingArea* area = nullptr;
    HCL_TRY(comm.staging(&area));
    std::byte* base = nullptr;
    HCL_TRY(area->p2pBuffer(layout.standInBytes, &base));
    std::vector<StagedP2PRun::Call> staged;
    for (size_t i = 0; i < layout.calls.size(); ++i) {
      if (layout.standIn[i] == P2PLayout::kHost) continue;
      staged.push_back({layout.user[i], base + layout.standIn[i], layout.calls[i].bytes, layout.calls[i].isSend});
    }
    auto inner = std::make_unique<ScheduleRun>(comm, std::move(schedule), p2pBuffers(layout, base), ReduceSpec{});
    auto run = std::make_unique<StagedP2PRun>(*area, std::move(staged), std::move(inner));
    HCL_TRY(run->begin());
    out.set(std::move(run));
    return {};
  };
}

// One task per communicator: its point-to-point calls first (all posted
// together), then its collectives in call order.
std::vector<std::unique_ptr<CommTask>> buildTasks(std::vector<PendingOp>& ops) {
  std::vector<Communicator*> order;
  for (const PendingOp& op : ops) {
    if (std::find(order.begin(), order.end(), op.comm.get()) == order.end()) order.push_back(op.comm.get());
  }
  std::vector<std::unique_ptr<CommTask>> tasks;
  for (Communicator* c : order) {
    std::vector<PendingOp> p2p;
    std::shared_ptr<Communicator> owner;
    const char* firstCall = nullptr;
    for (const PendingOp& op : ops) {
      if (op.comm.get() != c) continue;
      owner = op.comm;
      if (!firstCall) firstCall = op.call;
      if (op.kind == CollKind::SendRecv) p2p.push_back(op);
    }
    auto task = std::make_unique<CommTask>(owner, ops.size() == 1 ? firstCall : "hclGroupEnd");
    if (!p2p.empty()) task->add(p2pMaker(std::move(p2p)));
    for (const PendingOp& op : ops) {
      if (op.comm.get() == c && op.kind != CollKind::SendRecv) task->add(collectiveMaker(op));
    }
    tasks.push_back(std::move(task));
  }
  return tasks;
}

Status runOnStreams(std::vector<std::unique_ptr<CommTask>> tasks, std::vector<hclStream*> streams) {
  // The whole launch runs on the first stream's worker once every involved
  // stream has reached it; the other streams wait for it to finish, which
  // keeps each stream's order.
  struct Launch {
    std::vector<std::unique_ptr<CommTask>> tasks;
    std::atomic<size_t> arrived{0};
    std::atomic<bool> finished{false};
    Status result;
  };
  auto launch = std::make_shared<Launch>();
  launch->tasks = std::move(tasks);
  const size_t n = streams.size();
  streams[0]->impl->enqueue([launch, n]() -> Status {
    launch->arrived.fetch_add(1);
    Backoff backoff;
    while (launch->arrived.load() < n) backoff.pause();
    launch->result = runTasks(launch->tasks);
    launch->tasks.clear();
    launch->finished.store(true, std::memory_order_release);
    return launch->result;
  });
  for (size_t i = 1; i < n; ++i) {
    streams[i]->impl->enqueue([launch]() -> Status {
      launch->arrived.fetch_add(1);
      Backoff backoff;
      while (!launch->finished.load(std::memory_order_acquire)) backoff.pause();
      return {};
    });
  }
  return {};
}

// Whether a launch's collectives can be put on its device-runtime stream as
// their chunk pipelines: staged collectives of one communicator (so that the
// worker finishes their chunks, and releases their tickets, in the order
// they were issued).
bool stagesOnStream(const std::vector<PendingOp>& ops) {
  for (const PendingOp& op : ops) {
    if (op.comm != ops.front().comm || op.stream != ops.front().stream || !op.stream) return false;
    if (op.kind == CollKind::SendRecv || !op.comm->staged() || op.count == 0) return false;
  }
  return dynamic_cast<GatedStream*>(ops.front().stream->impl.get()) != nullptr;
}

// Collectives on a gated stream: each is put on the stream as the staged
// chunk pipeline or, on an IPC communicator, as the IPC path's steps.
Status launchStagedOnStream(std::vector<PendingOp> ops) {
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

// The other launches on one gated stream: send/recv, alone or mixed with
// collectives, of one staged communicator, no collective on the IPC path.
bool groupStagesOnStream(const std::vector<PendingOp>& ops) {
  const PendingOp& first = ops.front();
  if (!first.stream || !dynamic_cast<GatedStream*>(first.stream->impl.get())) return false;
  for (const PendingOp& op : ops) {
    if (op.comm != first.comm || op.stream != first.stream || !op.comm->staged()) return false;
    if (op.kind != CollKind::SendRecv && takesIpcPath(*op.comm, op)) return false;
  }
  return true;
}

// Where a group's device buffers stand in pinned memory: whole buffers, laid
// end to end. `in` is copied there before the group runs, `out` back after.
struct GroupStandIns {
  static constexpr size_t kUser = SIZE_MAX;
  struct Copy {
    void* user;
    size_t offset, bytes;
  };
  std::vector<Copy> in, out;
  std::vector<size_t> send, recv;  // per op: its stand-ins' offsets, or kUser
  size_t bytes = 0;
};

GroupStandIns groupStandIns(Communicator& comm, const std::vector<PendingOp>& ops) {
  GroupStandIns g;
  Device& device = comm.device();
  auto place = [&](const void* user, size_t bytes) -> size_t {
    if (bytes == 0 || !device.isDeviceMemory(user)) return GroupStandIns::kUser;
    const size_t offset = g.bytes;
    g.bytes += (bytes + 63) / 64 * 64;
    return offset;
  };
  for (const PendingOp& op : ops) {
    const size_t elem = dataTypeSize(op.type);
    size_t inBytes = 0, outBytes = 0;
    if (op.kind == CollKind::SendRecv) {
      (op.isSend ? inBytes : outBytes) = op.count * elem;
    } else {
      const StageLayout l = stageLayout(op.kind, comm.rank(), comm.nranks(), op.root);
      inBytes = l.readsInput ? l.inBlocks * op.count * elem : 0;
      outBytes = l.writesOutput ? l.outBlocks * op.count * elem : 0;
    }
    size_t send = GroupStandIns::kUser, recv = GroupStandIns::kUser;
    if (op.kind != CollKind::SendRecv && op.send == op.recv) {  // in place: one stand-in
      send = recv = place(op.recv, std::max(inBytes, outBytes));
    } else {
      if (op.kind != CollKind::SendRecv || op.isSend) send = place(op.send, inBytes);
      if (op.kind != CollKind::SendRecv || !op.isSend) recv = place(op.recv, outBytes);
    }
    if (send != GroupStandIns::kUser && inBytes > 0) g.in.push_back({const_cast<void*>(op.send), send, inBytes});
    if (recv != GroupStandIns::kUser && outBytes > 0) g.out.push_back({op.recv, recv, outBytes});
    g.send.push_back(send);
    g.recv.push_back(recv);
  }
  return g;
}

// Send/recv calls, alone or mixed with collectives, on one gated stream. The
// stream copies the launch's device inputs to pinned stand-ins, marks one
// ticket and waits for it, then copies the device outputs back; in between,
// the worker runs the whole launch on the stand-ins, as host buffers. Nothing
// overlaps the copies, but the worker never copies on a device queue while
// the native stream waits for it (docs/devices.md).
Status launchGroupOnStream(std::vector<PendingOp> ops) {
  Communicator& comm = *ops.front().comm;
  auto& stream = static_cast<GatedStream&>(*ops.front().stream->impl);
  StagingArea* area = nullptr;
  HCL_TRY(comm.stagingFor(ops.front().stream, &area));
  struct Plan {
    std::vector<PendingOp> ops;
    GroupStandIns standIns;
    std::byte* base = nullptr;  // the pinned block of stand-ins
    StreamGate* gate = nullptr;
    StreamTickets ticket;  // one; base and gate are set before it is published
  };
  auto plan = std::make_shared<Plan>();
  plan->standIns = groupStandIns(comm, ops);
  plan->ops = std::move(ops);
  auto issue = [&](StreamGate& gate, uint64_t* last) -> Status {
    const GroupStandIns& g = plan->standIns;
    plan->gate = &gate;
    plan->ticket.reserve(1);
    // Growing frees the old stand-ins, which earlier calls' copies on this
    // stream may still read: let them finish first.
    if (g.bytes > 0) {
      if (!area->p2pFits(g.bytes)) HCL_TRY(gate.synchronize());
      HCL_TRY(area->p2pBuffer(g.bytes, &plan->base));
    }
    for (const GroupStandIns::Copy& c : g.in)
      HCL_TRY(gate.copyOnStream(plan->base + c.offset, c.bytes, c.user, c.bytes, c.bytes, 1));
    uint64_t t = 0;
    HCL_TRY(gate.mark(&t));
    *last = t;
    HCL_TRY(gate.waitFor(t));
    plan->ticket.publish(t);
    for (const GroupStandIns::Copy& c : g.out)
      HCL_TRY(gate.copyOnStream(c.user, c.bytes, plan->base + c.offset, c.bytes, c.bytes, 1));
    return {};
  };
  stream.enqueuePrepared(
      [&](StreamGate& gate, uint64_t* last) {
        if (Status s = issue(gate, last); !s.ok()) plan->ticket.fail(s.withContext("staging on the stream"));
      },
      [plan]() -> Status {
        // The work queued on the stream before the launch is waited for
        // outside the executor's stall watch.
        uint64_t ticket = 0;
        HCL_TRY(plan->ticket.waitPublished(0, &ticket));
        HCL_TRY(plan->gate->waitStart(ticket));
        std::vector<PendingOp> ops = plan->ops;
        const GroupStandIns& g = plan->standIns;
        for (size_t i = 0; i < ops.size(); ++i) {
          ops[i].stream = nullptr;
          if (g.send[i] != GroupStandIns::kUser) ops[i].send = plan->base + g.send[i];
          if (g.recv[i] != GroupStandIns::kUser) ops[i].recv = plan->base + g.recv[i];
        }
        auto tasks = buildTasks(ops);
        return runTasks(tasks);
      });
  return {};
}

Status launch(std::vector<PendingOp> ops) {
  if (ops.empty()) return {};
  if (stagesOnStream(ops)) return launchStagedOnStream(std::move(ops));
  if (groupStagesOnStream(ops)) return launchGroupOnStream(std::move(ops));
  std::vector<hclStream*> streams;
  bool anyNullStream = false;
  for (const PendingOp& op : ops) {
    if (!op.stream) {
      anyNullStream = true;
    } else if (std::find(streams.begin(), streams.end(), op.stream) == streams.end()) {
      streams.push_back(op.stream);
    }
  }
  auto tasks = buildTasks(ops);
  if (!anyNullStream) return runOnStreams(std::move(tasks), std::move(streams));
  // Blocking launch: earlier work on the involved streams comes first.
  for (hclStream* s : streams) HCL_TRY(s->impl->synchronize());
  return runTasks(tasks);
}

Status runInits(std::vector<std::function<Status()>> inits) {
  if (inits.size() == 1) return inits[0]();
  std::vector<Status> results(inits.size());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < inits.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = inits[i](); });
    }
  }
  for (const Status& s : results) {
    if (!s.ok()) return s;
  }
  return {};
}

}  // namespace

bool inGroup() { return tlsGroup.depth > 0; }

Status groupStart() {
  ++tlsGroup.depth;
  return {};
}

Status groupEnd() {
  if (tlsGroup.depth == 0) return invalidUsage("hclGroupEnd: no matching hclGroupStart");
  if (--tlsGroup.depth > 0) return {};
  auto inits = std::move(tlsGroup.inits);
  auto ops = std::move(tlsGroup.ops);
  tlsGroup.inits.clear();
  tlsGroup.ops.clear();
  if (!inits.empty()) HCL_TRY(runInits(std::move(inits)));
  return launch(std::move(ops));
}

Status submit(PendingOp&& op) {
  if (inGroup()) {
    tlsGroup.ops.push_back(std::move(op));
    return {};
  }
  // The latency path: one collective on the null stream runs right here,
  // without a task list.
  if (!op.stream && op.kind != CollKind::SendRecv) {
    Communicator& comm = *op.comm;
    return runSingle(comm, op.call, [&](RunSlot& out) { return makeCollectiveRun(comm, op, out); });
  }
  std::vector<PendingOp> ops;
  ops.push_back(std::move(op));
  return launch(std::move(ops));
}

void deferInit(std::function<Status()> init) { tlsGroup.inits.push_back(std::move(init)); }

}  // namespace hcl
