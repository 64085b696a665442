// NCCL group semantics: calls between hclGroupStart and hclGroupEnd are
// recorded and launched together. Outside a group each call is a group of one.
#pragma once

#include <functional>
#include <memory>

#include "collectives/plan/collective.h"
#include "collectives/reduce/reduce.h"
#include "core/handles.h"

namespace hcl {

struct GatedStaging;  // core/staged_run.h
struct IpcCall;       // core/ipc_run.h

struct PendingOp {
  const char* call = "";
  CollKind kind = CollKind::AllReduce;
  bool isSend = false;  // for SendRecv
  std::shared_ptr<Communicator> comm;
  hclComm* handle = nullptr;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  hclDataType_t type = hclFloat32;
  // The reduction, resolved when the call was made; a pointer scalar is
  // read when the operation runs.
  ReduceSpec spec;
  const void* scalarPointer = nullptr;
  int root = 0;  // root, or peer for SendRecv
  hclStream* stream = nullptr;
  // Mixed into the tags of the call's messages (callTagSalt); set by submit.
  uint32_t tagSalt = 0;
  // Set when the call's copies run on its device-runtime stream.
  std::shared_ptr<GatedStaging> gated;
  // Set when the call takes the IPC path on its device-runtime stream.
  std::shared_ptr<IpcCall> ipc;
};

// Launches (one per call, or per group) a stream holds, queued or running,
// before the next launch on it waits for one to finish.
inline constexpr size_t kMaxPendingLaunches = 1024;

bool inGroup();
Status groupStart();
Status groupEnd();
// NCCL's ncclGroupSimulateEnd: closes one level like groupEnd; at the
// outermost level runs the group's initializations but none of its
// operations, and sets `estimatedUs` (left alone at an inner level) to the
// cost model's time for those operations. At the outermost level `refusal`
// (a bad simInfo) drops the group instead, as a failed call in it would; an
// inner level ignores it, as NCCL does.
Status groupSimulateEnd(const Status& refusal, double& estimatedUs);
// Whether an open group of any thread has recorded an operation on `stream`
// (which must then outlive the group).
bool openGroupUses(const hclStream* stream);
// Runs the op now (outside a group) or records it (inside one). With
// `heldAsOwner` (the communicator's execution gate, held on its owner's
// path; taken only outside a group, for a collective on the null stream),
// `op.comm` may be empty: the hold keeps the communicator alive.
Status submit(PendingOp&& op, ExecutionGate::Hold heldAsOwner = {});
// As NCCL: a call that fails inside an open group fails the whole group.
// hclGroupEnd then runs none of it and returns the first such error. Returns
// `failure` unchanged; outside a group it only returns it.
Status failGroup(Status failure);

// hclCommInitRank inside a group: `run` runs at hclGroupEnd, concurrently
// with the group's other initializations; `drop` instead, with the reason,
// when the group fails before it runs.
struct DeferredInit {
  std::function<Status()> run;
  std::function<void(const Status&)> drop;
  // The communicator a split or shrink exchanges over (null for an init):
  // creations from one parent run one after another, in call order, since
  // their exchanges share the parent's links.
  const void* parent = nullptr;
  // Makes a running `run` give up soon (hclCommAbort, or a sibling that
  // could not be started).
  std::function<void()> cancel;
};
void deferInit(DeferredInit init);

}  // namespace hcl
