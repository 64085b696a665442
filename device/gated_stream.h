// An HCL stream bound to a device runtime's own stream. Each job waits for
// the work enqueued on the native stream before it, runs on HCL's worker
// thread, and holds back the work enqueued on the native stream after it:
// NCCL's stream semantics, with the call returning at once.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "device/cpu/cpu_stream.h"
#include "device/device.h"

namespace hcl {

class GatedStream final : public Stream {
 public:
  GatedStream(DeviceKind kind, std::unique_ptr<StreamGate> gate);
  ~GatedStream() override;
  DeviceKind deviceKind() const override { return kind_; }
  void enqueue(std::function<Status()> job) override;
  Status synchronize() override;
  Status query() override;
  void waitForRoom(size_t maxPending) override { worker_.waitForRoom(maxPending); }
  // The native stream only: leaves the worker's errors for synchronize().
  Status synchronizeNative() { return gate_->synchronize(); }

  // For a job that puts its own commands on the native stream: the job is
  // queued on the worker first, then `prepare` runs in the caller's thread
  // and records each ticket it issues in `lastTicket`. They overlap on
  // purpose: with the stream's command queue full, prepare blocks until the
  // stream moves, which needs the job to release the tickets issued so far.
  // Prepare's failures reach the job through state the two share. The last
  // ticket is released once both are done, also when either failed. The job
  // (and what it holds: the launch's communicator and its staging memory)
  // is freed only after the native stream has run every command prepare
  // issued, as those read that memory after the last release.
  using Prepare = std::function<void(StreamGate& gate, uint64_t* lastTicket)>;
  void enqueuePrepared(const Prepare& prepare, std::function<Status()> job);

  // The same over several distinct streams at once: jobs[i] is queued on
  // streams[i]'s worker, then `prepare` puts commands on all their native
  // streams, in whatever order across them it needs, recording the last
  // ticket it issued on gates[i] in lastTickets[i]. No other launch puts
  // commands on these streams meanwhile.
  using JoinedPrepare =
      std::function<void(const std::vector<StreamGate*>& gates, std::vector<uint64_t>& lastTickets)>;
  static void enqueueJoined(const std::vector<GatedStream*>& streams, const JoinedPrepare& prepare,
                            std::vector<std::function<Status()>> jobs);

 private:
  DeviceKind kind_;
  std::unique_ptr<StreamGate> gate_;
  std::mutex order_;  // the native stream's commands and the worker's jobs in one order
  CpuStream worker_;  // last: drains before the gate goes
};

}  // namespace hcl
