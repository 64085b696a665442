#include "core/group_tasks.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "collectives/algorithms/p2p.h"
#include "core/ipc_run.h"
#include "core/kept_runs.h"
#include "core/staged_run.h"

namespace hcl {
namespace {

CommTask::Maker collectiveMaker(PendingOp op) {
  return [op = std::move(op)](RunSlot& out) { return makeCollectiveRun(*op.comm, op, out); };
}

// A launch's point-to-point calls as transfers. Device buffers get pinned
// stand-ins, laid end to end in one block; host buffers are used as they are,
// except a send that a receive of the same launch writes over (one buffer
// exchanged in place, as MPI_Sendrecv_replace does): peers may read a send
// at any point of the launch, so it is sent from a copy taken at its start.
struct P2PLayout {
  static constexpr size_t kHost = SIZE_MAX;
  static constexpr size_t kNoCopy = SIZE_MAX;
  std::vector<P2PCall> calls;
  std::vector<void*> user;      // each call's own buffer
  std::vector<size_t> standIn;  // its stand-in's offset in the block, or kHost
  size_t standInBytes = 0;
  std::vector<size_t> copyAt;  // a send's copy's offset in the copies, or kNoCopy
  size_t copyBytes = 0;
};

size_t roundUp64(size_t v) { return (v + 63) / 64 * 64; }

// Marks the host sends that a host receive of the layout overlaps. Sorted
// receives and the furthest end among each prefix of them answer each send
// in log time: a group may hold a send and a receive for every peer.
void copySendsReceivesOverwrite(P2PLayout& l) {
  l.copyAt.assign(l.calls.size(), P2PLayout::kNoCopy);
  auto onHost = [&](size_t i) { return l.calls[i].bytes > 0 && l.standIn[i] == P2PLayout::kHost; };
  auto begin = [&](size_t i) { return reinterpret_cast<uintptr_t>(l.user[i]); };
  std::vector<std::pair<uintptr_t, uintptr_t>> recvs;  // [begin, end), by begin
  for (size_t i = 0; i < l.calls.size(); ++i) {
    if (!l.calls[i].isSend && onHost(i)) recvs.emplace_back(begin(i), begin(i) + l.calls[i].bytes);
  }
  if (recvs.empty()) return;
  std::sort(recvs.begin(), recvs.end());
  std::vector<uintptr_t> furthestEnd(recvs.size());
  for (size_t k = 0; k < recvs.size(); ++k) {
    furthestEnd[k] = std::max(recvs[k].second, k ? furthestEnd[k - 1] : 0);
  }
  for (size_t s = 0; s < l.calls.size(); ++s) {
    if (!l.calls[s].isSend || !onHost(s)) continue;
    const uintptr_t from = begin(s), to = from + l.calls[s].bytes;
    // The receives that start before this send ends; one of them reaches past its start?
    const auto starting = std::lower_bound(recvs.begin(), recvs.end(), std::make_pair(to, uintptr_t{0}));
    if (starting == recvs.begin() || furthestEnd[static_cast<size_t>(starting - recvs.begin()) - 1] <= from) continue;
    l.copyAt[s] = l.copyBytes;
    l.copyBytes += roundUp64(l.calls[s].bytes);
  }
}

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
      l.standInBytes += roundUp64(c.bytes);
    } else {
      l.standIn.push_back(P2PLayout::kHost);
    }
    l.user.push_back(user);
    l.calls.push_back(c);
  }
  copySendsReceivesOverwrite(l);
  return l;
}

// The buffers the transfers use, with the stand-in block at `base` and the
// sends' copies at `copies`.
RunBuffers p2pBuffers(const P2PLayout& l, std::byte* base, std::byte* copies) {
  RunBuffers buffers;
  for (size_t i = 0; i < l.calls.size(); ++i) {
    if (l.standIn[i] != P2PLayout::kHost) {
      buffers.user.push_back(base + l.standIn[i]);
    } else if (l.copyAt[i] != P2PLayout::kNoCopy) {
      buffers.user.push_back(copies + l.copyAt[i]);
    } else {
      buffers.user.push_back(l.user[i]);
    }
  }
  return buffers;
}

// A run that owns the copies its transfers send from.
class RunOverCopies final : public OpRun {
 public:
  RunOverCopies(std::unique_ptr<std::byte[]> copies, std::unique_ptr<OpRun> inner)
      : copies_(std::move(copies)), inner_(std::move(inner)) {}
  Status advance(bool* done, bool* progressed) override { return inner_->advance(done, progressed); }
  int waitingOn() const override { return inner_->waitingOn(); }

 private:
  std::unique_ptr<std::byte[]> copies_;
  std::unique_ptr<OpRun> inner_;  // last: it goes before the memory it sends from
};

std::unique_ptr<std::byte[]> copySends(const P2PLayout& l) {
  if (l.copyBytes == 0) return nullptr;
  auto copies = std::make_unique_for_overwrite<std::byte[]>(l.copyBytes);
  for (size_t i = 0; i < l.calls.size(); ++i) {
    if (l.copyAt[i] != P2PLayout::kNoCopy) std::memcpy(copies.get() + l.copyAt[i], l.user[i], l.calls[i].bytes);
  }
  return copies;
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
    std::unique_ptr<std::byte[]> copies = copySends(layout);
    if (layout.standInBytes == 0 && !copies) {
      out.emplaceSchedule(comm, std::move(schedule), p2pBuffers(layout, nullptr, nullptr), ReduceSpec{});
      return {};
    }
    std::unique_ptr<OpRun> run;
    if (layout.standInBytes == 0) {
      run = std::make_unique<ScheduleRun>(comm, std::move(schedule), p2pBuffers(layout, nullptr, copies.get()),
                                          ReduceSpec{});
    } else {
      StagingArea* area = nullptr;
      HCL_TRY(comm.staging(&area));
      std::byte* base = nullptr;
      HCL_TRY(area->p2pBuffer(layout.standInBytes, &base));
      std::vector<StagedP2PRun::Call> staged;
      for (size_t i = 0; i < layout.calls.size(); ++i) {
        if (layout.standIn[i] == P2PLayout::kHost) continue;
        staged.push_back({layout.user[i], base + layout.standIn[i], layout.calls[i].bytes, layout.calls[i].isSend});
      }
      auto inner = std::make_unique<ScheduleRun>(comm, std::move(schedule), p2pBuffers(layout, base, copies.get()),
                                                 ReduceSpec{});
      auto stagedRun = std::make_unique<StagedP2PRun>(*area, std::move(staged), std::move(inner));
      HCL_TRY(stagedRun->begin());
      run = std::move(stagedRun);
    }
    out.set(copies ? std::make_unique<RunOverCopies>(std::move(copies), std::move(run)) : std::move(run));
    return {};
  };
}

}  // namespace

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
    out.set(std::make_unique<GatedStagedRun>(comm, op.gated, spec, op.tagSalt));
    return {};
  }
  if (op.ipc) {
    out.set(std::make_unique<IpcRun>(comm, op.ipc));
    return {};
  }
  if (takesIpcPath(comm, op)) {
    // Without a device-runtime stream: the run puts its stream side on a
    // stream of HCL's own.
    IpcArea* area = nullptr;
    HCL_TRY(comm.ipcAreaFor(nullptr, &area));
    out.set(std::make_unique<IpcRun>(comm, std::make_shared<IpcCall>(collArgsFor(comm, op), spec, op.send, op.recv),
                                     area));
    return {};
  }
  if (comm.staged() && op.count > 0) {
    StagingArea* area = nullptr;
    HCL_TRY(comm.staging(&area));
    out.set(std::make_unique<StagedRun>(comm, *area, collArgsFor(comm, op), op.send, op.recv, spec, op.tagSalt));
    return {};
  }
  // A loop of calls of one shape builds its run once.
  const RunShape shape = RunShape::of(op.kind, op.count, op.type, op.spec.kind == ReduceKind::PreMulSum,
                                      op.send == op.recv, op.root);
  KeptRuns& kept = comm.keptRuns();
  if (ScheduleRun* run = kept.rearm(shape, op.send, op.recv, spec, op.tagSalt)) {
    out.borrow(*run);
    return {};
  }
  const CollArgs args = collArgsFor(comm, op);
  std::shared_ptr<const PreparedSchedule> schedule = comm.schedule(args);
  if (ScheduleRun* run = kept.keep(comm, shape, schedule, op.send, op.recv, spec, op.tagSalt)) {
    out.borrow(*run);
    return {};
  }
  out.emplaceSchedule(comm, std::move(schedule), RunBuffers{op.send, op.recv, {}}, spec, op.tagSalt);
  return {};
}

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


}  // namespace hcl
