#include "core/ipc_run.h"

#include <fmt/format.h>

#include <algorithm>

namespace hcl {
namespace {

size_t roundUp64(size_t v) { return (v + 63) / 64 * 64; }

Status describe(Device& dev, const void* p, bool touched, IpcBufferEntry& e) {
  e = IpcBufferEntry{};
  if (!touched) return {};
  e.present = 1;
  e.address = reinterpret_cast<uintptr_t>(p);
  return dev.ipcExport(p, &e.handle, &e.offset);
}

// Where a call's stand-ins go in the area's block: buffers the device cannot
// export (host memory, memory the runtime cannot share, such as
// virtual-memory-API allocations) get device stand-ins; so does an
// in-place alltoall's input, which peers overwrite while this rank may
// still read it.
struct StandInLayout {
  bool send = false, recv = false;
  size_t recvAt = 0, total = 0;
};

template <typename Exported>
StandInLayout standInLayout(const IpcCall& call, Exported exported) {
  const IpcBufferUse use = ipcBufferUse(call.args);
  StandInLayout l;
  l.send = use.send && (!exported(call.send, true) || (call.args.kind == CollKind::AlltoAll && call.args.inPlace));
  l.recv = use.recv && !exported(call.recv, false);
  l.recvAt = l.send ? roundUp64(use.sendBytes) : 0;
  l.total = l.recvAt + (l.recv ? use.recvBytes : 0);
  return l;
}

Status issueTail(IpcCall& call, StreamGate& gate, bool markEnd, uint64_t* last) {
  const IpcCall::Tail& c = call.tail;
  if (c.bytes > 0) HCL_TRY(gate.copyOnStream(c.dst, c.bytes, c.src, c.bytes, c.bytes, 1));
  if (markEnd) {
    uint64_t t = 0;
    HCL_TRY(gate.mark(&t));
    *last = t;
    call.tickets.publish(t);
  }
  return {};
}

Status issueSteps(Communicator& comm, IpcCall& call, StreamGate& gate, IpcArea& area, bool markEnd, uint64_t* last) {
  Device& dev = comm.device();
  const IpcBufferUse use = ipcBufferUse(call.args);
  const StandInLayout layout = standInLayout(call, [&](const void* p, bool isSend) {
    return dev.isDeviceMemory(p) && describe(dev, p, true, isSend ? call.self.send : call.self.recv).ok();
  });
  const bool sendStandIn = layout.send, recvStandIn = layout.recv;
  const size_t recvAt = layout.recvAt, total = layout.total;
  std::byte* base = nullptr;
  if (total > 0) {
    // Launches on a caller's stream reserved what they knew of beforehand
    // (ipcStandInBytes); this waits only for the rest.
    if (area.standInsGrowthFreesBlock(total)) HCL_TRY(gate.synchronize());
    HCL_TRY(area.standIns(total, &base));
  }
  if (sendStandIn) HCL_TRY(gate.copyOnStream(base, use.sendBytes, call.send, use.sendBytes, use.sendBytes, 1));
  if (sendStandIn) HCL_TRY(describe(dev, base, true, call.self.send).withContext("exporting the send stand-in"));
  void* recv = recvStandIn ? base + recvAt : call.recv;
  if (recvStandIn) HCL_TRY(describe(dev, recv, true, call.self.recv).withContext("exporting the receive stand-in"));
  HCL_TRY(area.takeTable([&comm] { return comm.failure(); }, &call.tableSlot, &call.table));
  // A ticket the worker sees once the stream reaches it; with `wait`, the
  // stream then stops until the worker releases it.
  auto ticket = [&](bool wait) -> Status {
    uint64_t t = 0;
    HCL_TRY(gate.mark(&t));
    *last = t;
    if (wait) HCL_TRY(gate.waitFor(t));
    call.tickets.publish(t);
    return {};
  };
  HCL_TRY(ticket(true));
  HCL_TRY(gate.segmentsOnStream(call.table, ipcSegmentRows(call.args), ipcSegmentWidth(call.args), call.spec));
  HCL_TRY(ticket(true));
  if (recvStandIn) call.tail = {call.recv, recv, use.recvBytes};
  if (call.tailAfterRelease) return {};
  return issueTail(call, gate, markEnd, last);
}

}  // namespace

size_t ipcStandInBytes(Device& dev, const IpcCall& call) {
  return standInLayout(call, [&](const void* p, bool) { return dev.isDeviceMemory(p); }).total;
}

void issueIpc(Communicator& comm, IpcCall& call, StreamGate& gate, IpcArea& area, bool markEnd, uint64_t* last) {
  call.gate = &gate;
  call.area = &area;
  call.waitsForEnd = markEnd;
  call.tickets.reserve(3);
  if (Status s = issueSteps(comm, call, gate, area, markEnd, last); !s.ok()) {
    call.tickets.fail(s.withContext("IPC path, on the stream"));
  }
}

IpcRun::IpcRun(Communicator& comm, std::shared_ptr<IpcCall> call, IpcArea* ownArea)
    : comm_(comm), call_(std::move(call)), ownArea_(ownArea), phase_(ownArea ? Phase::Issue : Phase::Inputs) {}

IpcRun::~IpcRun() {
  if (!call_->gate) return;
  // Every ticket must be released, also when the call failed part way;
  // release() covers every ticket up to the one given.
  uint64_t last = 0;
  for (size_t i = 0; i < 3; ++i) {
    uint64_t t = 0;
    bool ready = false;
    if (call_->tickets.get(i, &t, &ready).ok() && ready) last = t;
  }
  if (last) call_->gate->release(last);
  // A table whose kernel may still run later stays taken, so no other call
  // writes into it meanwhile.
  if (kernelDone_ && call_->table) call_->area->freeTable(call_->tableSlot);
}

void IpcRun::startMessages(bool entries) {
  // With entries: this rank's IpcEntry to every peer and theirs back.
  // Without: an empty "done" message each way.
  const int n = comm_.nranks(), r = comm_.rank();
  if (entries) entries_ = std::make_unique<IpcEntry[]>(static_cast<size_t>(n));
  Schedule s;
  s.tag = static_cast<uint32_t>(call_->args.kind);
  s.algorithm = "ipc";
  ScheduleBuilder b(s);
  RunBuffers buffers;
  buffers.user.push_back(&call_->self);
  for (int p = 0; p < n; ++p) buffers.user.push_back(&entries_[static_cast<size_t>(p)]);
  const size_t bytes = entries ? sizeof(IpcEntry) : 0;
  for (int p = 0; p < n; ++p) {
    if (p == r) continue;
    b.send(p, userAt(0), bytes);
    b.recv(p, userAt(static_cast<uint32_t>(1 + p)), bytes);
  }
  messages_ = std::make_unique<ScheduleRun>(comm_, std::move(s), std::move(buffers), ReduceSpec{});
}

Status IpcRun::mapPeersAndFill() {
  const int n = comm_.nranks(), r = comm_.rank();
  const uint64_t token = comm_.peers()[static_cast<size_t>(r)].processToken;
  std::vector<const void*> send(static_cast<size_t>(n));
  std::vector<void*> recv(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    const IpcEntry& e = p == r ? call_->self : entries_[static_cast<size_t>(p)];
    CollArgs theirs = call_->args;
    theirs.rank = p;
    const IpcBufferUse use = ipcBufferUse(theirs);
    auto reach = [&](const IpcBufferEntry& b, bool needed, const char* what, void** out) -> Status {
      *out = nullptr;
      if (!needed) return {};
      if (!b.present) {
        return invalidUsage(fmt::format("rank {}: rank {} gave no {} buffer for {} (do the ranks agree on the root?)",
                                        r, p, what, collKindName(call_->args.kind)));
      }
      if (p == r || comm_.peers()[static_cast<size_t>(p)].processToken == token) {
        *out = reinterpret_cast<void*>(b.address);  // same process: the address is valid here
        return {};
      }
      void* base = nullptr;
      HCL_TRY(comm_.ipcMappings().open(p, b.handle, &base));
      *out = static_cast<std::byte*>(base) + b.offset;
      return {};
    };
    void* s = nullptr;
    HCL_TRY(reach(e.send, use.send, "send", &s));
    send[static_cast<size_t>(p)] = s;
    HCL_TRY(reach(e.recv, use.recv, "receive", &recv[static_cast<size_t>(p)]));
  }
  ipcSegments(call_->args, send, recv, call_->table);
  return {};
}

Status IpcRun::advance(bool* done, bool* progressed) {
  *done = false;
  IpcCall& c = *call_;
  auto reached = [&](size_t i, bool* yes) -> Status {
    *yes = false;
    bool published = false;
    HCL_TRY(c.tickets.get(i, &ticket_[i], &published));
    if (published) HCL_TRY(c.gate->pollStart(ticket_[i], yes));
    return {};
  };
  bool yes = false, finished = false;
  switch (phase_) {
    case Phase::Issue: {
      uint64_t last = 0;
      c.tailAfterRelease = true;
      issueIpc(comm_, c, *ownArea_->ownGate(), *ownArea_, true, &last);
      phase_ = Phase::Inputs;
      *progressed = true;
      [[fallthrough]];
    }
    case Phase::Inputs:
      HCL_TRY(reached(0, &yes));
      if (!yes) return {};
      startMessages(true);
      phase_ = Phase::Exchange;
      *progressed = true;
      [[fallthrough]];
    case Phase::Exchange:
      HCL_TRY(messages_->advance(&finished, progressed));
      if (!finished) return {};
      HCL_TRY(mapPeersAndFill());
      c.gate->release(ticket_[0]);
      phase_ = Phase::Compute;
      *progressed = true;
      [[fallthrough]];
    case Phase::Compute:
      HCL_TRY(reached(1, &yes));
      if (!yes) return {};
      kernelDone_ = true;
      startMessages(false);
      phase_ = Phase::Finish;
      *progressed = true;
      [[fallthrough]];
    case Phase::Finish:
      HCL_TRY(messages_->advance(&finished, progressed));
      if (!finished) return {};
      c.gate->release(ticket_[1]);
      if (c.tailAfterRelease) {
        uint64_t last = 0;
        HCL_TRY(issueTail(c, *c.gate, c.waitsForEnd, &last).withContext("IPC path, on the stream"));
      }
      phase_ = c.waitsForEnd ? Phase::End : Phase::Done;
      *progressed = true;
      if (phase_ == Phase::Done) break;
      [[fallthrough]];
    case Phase::End:
      HCL_TRY(reached(2, &yes));
      if (!yes) return {};
      c.gate->release(ticket_[2]);
      phase_ = Phase::Done;
      *progressed = true;
      break;
    case Phase::Done: break;
  }
  // Every ticket of this call is released: mappings retired meanwhile may
  // close now, unless another call's stream still waits.
  comm_.ipcMappings().closeRetired();
  *done = true;
  return {};
}

}  // namespace hcl
