// The same-vendor IPC path: a collective among ranks on one host whose
// devices can map each other's memory (CUDA/HIP IPC) runs on the devices
// themselves, with no copy through host memory.
//
// On the caller's stream, when the call is made:
//   [copy host input -> device stand-in]  mark t0  wait t0
//   segments (the table, filled in later)  mark t1  wait t1
//   [copy device stand-in -> host output]  [mark t2]
// HCL's worker, once the stream reaches t0, swaps buffer handles with every
// peer, maps theirs, writes this rank's segments (core/ipc_layout.h) into the
// table and releases t0; the stream then reduces or copies straight between
// the ranks' buffers. Once the stream reaches t1 the worker tells every peer
// it is done and waits for all of them before it releases t1: by then every
// peer has written its part of this rank's output and no longer reads its
// input. Calls made without a stream do the same on a stream HCL owns
// (t2 marks the end the worker waits for).
#pragma once

#include <memory>

#include "collectives/plan/collective.h"
#include "core/communicator.h"
#include "core/executor.h"
#include "core/ipc_area.h"
#include "core/ipc_layout.h"
#include "core/staged_run.h"

namespace hcl {

struct IpcCall {
  IpcCall(CollArgs a, ReduceSpec s, const void* sendBuf, void* recvBuf)
      : args(a), spec(s), send(sendBuf), recv(recvBuf) {}
  CollArgs args;
  ReduceSpec spec;
  const void* send;
  void* recv;
  // Set when the stream side is issued.
  StreamGate* gate = nullptr;
  IpcArea* area = nullptr;
  IpcEntry self;  // this rank's buffers as peers reach them (zero: not touched)
  IpcSegment* table = nullptr;
  size_t tableSlot = 0;
  bool waitsForEnd = false;  // t2 marked (calls without a stream)
  StreamTickets tickets;     // t0, t1[, t2]
  // Issued by HCL's worker (calls without a stream): what follows t1 is
  // issued once the worker has released t1. A copy into pageable host
  // memory returns only when the stream has run it, so issued before that
  // release it would wait for the very thread that issued it.
  bool tailAfterRelease = false;
  struct Tail {
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
  } tail;  // the copy back from the receive stand-in; bytes 0: none
};

// Bytes of device stand-ins `call` needs for the buffers known not to be
// exportable (host memory; an in-place alltoall's input). A device buffer
// the runtime then fails to export needs more, found when issuing.
size_t ipcStandInBytes(Device& dev, const IpcCall& call);

// The stream side (above), in the calling thread; records a failure in the
// call's tickets. `last` receives the last ticket issued.
void issueIpc(Communicator& comm, IpcCall& call, StreamGate& gate, IpcArea& area, bool markEnd, uint64_t* last);

class IpcRun final : public OpRun {
 public:
  // `ownArea`: the call was made without a stream; the run issues its
  // stream side on that area's own gate when it starts.
  IpcRun(Communicator& comm, std::shared_ptr<IpcCall> call, IpcArea* ownArea = nullptr);
  ~IpcRun() override;
  Status advance(bool* done, bool* progressed) override;
  int waitingOn() const override { return messages_ ? messages_->waitingOn() : -1; }

 private:
  enum class Phase { Issue, Inputs, Exchange, Compute, Finish, End, Done };
  void startMessages(bool entries);
  Status mapPeersAndFill();

  Communicator& comm_;
  std::shared_ptr<IpcCall> call_;
  IpcArea* ownArea_;
  Phase phase_;
  uint64_t ticket_[3] = {};
  std::unique_ptr<IpcEntry[]> entries_;
  std::unique_ptr<ScheduleRun> messages_;
  bool kernelDone_ = false;
};

}  // namespace hcl
