// An HCL stream bound to a device runtime's own stream. Each job waits for
// the work enqueued on the native stream before it, runs on HCL's worker
// thread, and holds back the work enqueued on the native stream after it:
// NCCL's stream semantics, with the call returning at once.
#pragma once

#include <memory>
#include <mutex>
#include <span>

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

  // For a job that puts its own commands on the native stream: the job is
  // queued on the worker first, then `prepare` runs in the caller's thread
  // and records each ticket it issues in `lastTicket`. They overlap on
  // purpose: with the stream's command queue full, prepare blocks until the
  // stream moves, which needs the job to release the tickets issued so far.
  // Prepare's failures reach the job through state the two share. The last
  // ticket is released once both are done, also when either failed.
  using Prepare = std::function<void(StreamGate& gate, uint64_t* lastTicket)>;
  void enqueuePrepared(const Prepare& prepare, std::function<Status()> job);

  // The same for one job over several gated streams (distinct objects, which
  // may wrap one native stream): the job runs on the first stream's worker,
  // and the other streams' workers wait until it has ended, so each stream
  // keeps its order. Every stream's order is held while the jobs are queued
  // and `prepare` runs; it gets the streams' gates in the order given and
  // records each one's last ticket. Every stream reports the job's result.
  using PrepareAll = std::function<void(std::span<StreamGate* const> gates, std::span<uint64_t> lastTickets)>;
  static void enqueuePrepared(std::span<GatedStream* const> streams, const PrepareAll& prepare,
                              std::function<Status()> job);

 private:
  DeviceKind kind_;
  std::unique_ptr<StreamGate> gate_;
  std::mutex order_;  // the native stream's commands and the worker's jobs in one order
  CpuStream worker_;  // last: drains before the gate goes
};

}  // namespace hcl
