// C entry points for collectives and point-to-point calls.
#include <fmt/format.h>

#include "core/errors.h"
#include "core/group.h"
#include "core/no_throw.h"
#include "core/log.h"
#include "core/validate.h"

using namespace hcl;

namespace {

struct CollCall {
  const char* name;
  CollKind kind;
  const void* send;
  void* recv;
  size_t count;
  // Raw values until validated: a caller may pass any int, and loading one
  // outside the enum's range through the enum type is undefined behaviour.
  int type;
  int op = hclSum;
  bool reduces = false;
  int root = -1;          // -1: no root (collectives without one)
  size_t sendMultiplier;  // elements in sendbuff = count * sendMultiplier (nranks when 0)
  size_t recvMultiplier;
  bool rootOnlySend = false;  // scatter: sendbuff matters only at root
  bool rootOnlyRecv = false;  // gather/reduce: recvbuff matters only at root
  // The arguments' names in this call's signature, for messages.
  const char* countName = "count";
  const char* sendName = "sendbuff";
  const char* recvName = "recvbuff";  // nullptr: the same buffer as sendName (hclBcast)
};

bool hasRoot(const CollCall& c) {
  return c.kind == CollKind::Reduce || c.kind == CollKind::Broadcast || c.kind == CollKind::Gather ||
         c.kind == CollKind::Scatter;
}

// Out of the way of the calls that succeed.
[[gnu::cold]] hclResult_t fail(hclComm_t comm, Status s) { return report(failGroup(std::move(s)), comm); }
[[gnu::cold]] hclResult_t refuse(const CollCall& c, hclComm_t comm, const Status& s) {
  return fail(comm, s.withContext(c.name));
}

Status checkArguments(const CollCall& c, Communicator& impl, hclStream_t stream) {
  HCL_TRY(checkDataType(c.type));
  if (c.reduces) HCL_TRY(checkOp(impl, c.op));
  if (hasRoot(c)) HCL_TRY(checkRank("root", c.root, impl.nranks()));
  HCL_TRY(checkStream(stream));
  const size_t n = static_cast<size_t>(impl.nranks());
  const size_t sm = c.sendMultiplier ? c.sendMultiplier : n;
  const size_t rm = c.recvMultiplier ? c.recvMultiplier : n;
  HCL_TRY(checkCount(c.countName, c.count, std::max(sm, rm), static_cast<hclDataType_t>(c.type)));
  const bool isRoot = impl.rank() == c.root;
  if (!c.rootOnlySend || isRoot) HCL_TRY(checkBuffer(c.sendName, c.send, c.count));
  if (c.recvName && (!c.rootOnlyRecv || isRoot)) HCL_TRY(checkBuffer(c.recvName, c.recv, c.count));
  return {};
}

hclResult_t submitCollective(const CollCall& c, hclComm_t comm, hclStream_t stream) {
  Communicator* impl = nullptr;
  if (Status s = checkComm(comm, impl); !s.ok()) return refuse(c, comm, s);
  // What keeps the communicator alive through the call, taken at once: its
  // execution gate held on the owner's path (the handle's teardown waits
  // for that), for a call that may run right away, or else a reference.
  const bool grouped = inGroup();
  ExecutionGate::Hold heldAsOwner;
  if (!stream && !grouped) heldAsOwner = impl->executionGate().tryEnterAsOwner();
  std::shared_ptr<Communicator> reference;
  if (!heldAsOwner) reference = comm->impl;
  if (Status s = checkArguments(c, *impl, stream); !s.ok()) return refuse(c, comm, s);
  log::trace(log::Coll, "{}: sendbuff {} recvbuff {} count {} datatype {} op {} root {} comm {} stream {}", c.name,
             c.send, static_cast<const void*>(c.recv), c.count, dataTypeName(c.type), c.op, c.root,
             static_cast<const void*>(comm), static_cast<const void*>(stream));
  PendingOp op;
  op.call = c.name;
  op.kind = c.kind;
  op.handle = comm;
  op.send = c.send;
  op.recv = c.recv;
  op.count = c.count;
  op.type = static_cast<hclDataType_t>(c.type);
  if (c.reduces) {
    Status r = impl->redOps().resolve(static_cast<hclRedOp_t>(c.op), op.type, impl->nranks(), op.spec,
                                      &op.scalarPointer);
    if (!r.ok()) return refuse(c, comm, r);
  } else {
    op.spec.type = op.type;
    op.spec.nranks = impl->nranks();
  }
  op.root = hasRoot(c) ? c.root : 0;
  op.stream = stream;
  op.comm = std::move(reference);
  const Status s = noThrow(c.name, [&] { return submit(std::move(op), std::move(heldAsOwner)); });
  return s.ok() ? hclSuccess : fail(comm, s);
}

}  // namespace

extern "C" {

hclResult_t hclAllReduce(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype,
                         hclRedOp_t op, hclComm_t comm, hclStream_t stream) {
  return submitCollective({"hclAllReduce", CollKind::AllReduce, sendbuff, recvbuff, count, datatype, op,
                           true, -1, 1, 1},
                          comm, stream);
}

hclResult_t hclReduce(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype,
                      hclRedOp_t op, int root, hclComm_t comm, hclStream_t stream) {
  CollCall c{"hclReduce", CollKind::Reduce, sendbuff, recvbuff, count, datatype, op, true, root, 1, 1};
  c.rootOnlyRecv = true;
  return submitCollective(c, comm, stream);
}

hclResult_t hclBroadcast(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype,
                         int root, hclComm_t comm, hclStream_t stream) {
  CollCall c{"hclBroadcast", CollKind::Broadcast, sendbuff, recvbuff, count, datatype, hclSum, false, root, 1, 1};
  c.rootOnlySend = true;
  return submitCollective(c, comm, stream);
}

hclResult_t hclBcast(void* buff, size_t count, hclDataType_t datatype, int root, hclComm_t comm,
                     hclStream_t stream) {
  CollCall c{"hclBcast", CollKind::Broadcast, buff, buff, count, datatype, hclSum, false, root, 1, 1};
  c.sendName = "buff";
  c.recvName = nullptr;
  return submitCollective(c, comm, stream);
}

hclResult_t hclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, hclDataType_t datatype,
                         hclComm_t comm, hclStream_t stream) {
  CollCall c{"hclAllGather", CollKind::AllGather, sendbuff, recvbuff, sendcount, datatype, hclSum, false, -1, 1, 0};
  c.countName = "sendcount";
  return submitCollective(c, comm, stream);
}

hclResult_t hclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             hclDataType_t datatype, hclRedOp_t op, hclComm_t comm, hclStream_t stream) {
  CollCall c{"hclReduceScatter", CollKind::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, true, -1, 0, 1};
  c.countName = "recvcount";
  return submitCollective(c, comm, stream);
}

hclResult_t hclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype,
                        hclComm_t comm, hclStream_t stream) {
  return submitCollective({"hclAlltoAll", CollKind::AlltoAll, sendbuff, recvbuff, count, datatype, hclSum,
                           false, -1, 0, 0},
                          comm, stream);
}

hclResult_t hclGather(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype, int root,
                      hclComm_t comm, hclStream_t stream) {
  CollCall c{"hclGather", CollKind::Gather, sendbuff, recvbuff, count, datatype, hclSum, false, root, 1, 0};
  c.rootOnlyRecv = true;
  return submitCollective(c, comm, stream);
}

hclResult_t hclScatter(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype, int root,
                       hclComm_t comm, hclStream_t stream) {
  CollCall c{"hclScatter", CollKind::Scatter, sendbuff, recvbuff, count, datatype, hclSum, false, root, 0, 1};
  c.rootOnlySend = true;
  return submitCollective(c, comm, stream);
}

static hclResult_t submitP2P(const char* name, bool isSend, const void* buff, size_t count,
                             hclDataType_t datatype, int peer, hclComm_t comm, hclStream_t stream) {
  std::shared_ptr<Communicator> impl;
  Status s = checkComm(comm, impl);
  if (s.ok()) s = checkDataType(datatype);
  if (s.ok()) s = checkRank("peer", peer, impl->nranks());
  if (s.ok()) s = checkStream(stream);
  if (s.ok()) s = checkCount("count", count, 1, datatype);
  if (s.ok()) s = checkBuffer(isSend ? "sendbuff" : "recvbuff", buff, count);
  if (s.ok()) {
    PendingOp op;
    op.call = name;
    op.kind = CollKind::SendRecv;
    op.isSend = isSend;
    op.comm = impl;
    op.handle = comm;
    op.send = isSend ? buff : nullptr;
    op.recv = isSend ? nullptr : const_cast<void*>(buff);
    op.count = count;
    op.type = datatype;
    op.root = peer;
    op.stream = stream;
    return report(failGroup(noThrow(name, [&] { return submit(std::move(op)); })), comm);
  }
  return report(failGroup(s.withContext(name)), comm);
}

hclResult_t hclSend(const void* sendbuff, size_t count, hclDataType_t datatype, int peer, hclComm_t comm,
                    hclStream_t stream) {
  return submitP2P("hclSend", true, sendbuff, count, datatype, peer, comm, stream);
}

hclResult_t hclRecv(void* recvbuff, size_t count, hclDataType_t datatype, int peer, hclComm_t comm,
                    hclStream_t stream) {
  return submitP2P("hclRecv", false, recvbuff, count, datatype, peer, comm, stream);
}

hclResult_t hclGroupStart(void) { return report(groupStart()); }

hclResult_t hclGroupEnd(void) { return report(noThrow("hclGroupEnd", [] { return groupEnd(); })); }

hclResult_t hclGroupSimulateEnd(hclSimInfo_t* simInfo) {
  // As NCCL: without a simInfo the group simply ends; with a bad one it is
  // dropped, and either way it is closed.
  if (!simInfo) return report(groupEnd());
  Status refusal;
  if (simInfo->magic != HCL_SIM_INFO_MAGIC) {
    refusal = invalidArgument(fmt::format(
        "hclGroupSimulateEnd: simInfo->magic {:#x} is not HCL_SIM_INFO_MAGIC (initialise it with "
        "HCL_SIM_INFO_INITIALIZER)", simInfo->magic));
  }
  double estimated = static_cast<double>(simInfo->estimatedTime);
  const Status s = groupSimulateEnd(refusal, estimated);
  if (s.ok()) simInfo->estimatedTime = static_cast<float>(estimated);
  return report(s);
}

}  // extern "C"
