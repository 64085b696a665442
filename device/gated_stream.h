// An HCL stream bound to a device runtime's own stream. Each job waits for
// the work enqueued on the native stream before it, runs on HCL's worker
// thread, and holds back the work enqueued on the native stream after it:
// NCCL's stream semantics, with the call returning at once.
#pragma once

#include <memory>
#include <mutex>

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

  // For a job that puts its own commands on the native stream: `prepare`
  // runs now, in the caller's thread, and records each ticket it issues in
  // `lastTicket`; the job runs on the worker, after which the last ticket is
  // released, also when the job or prepare failed.
  using Prepare = std::function<Status(StreamGate& gate, uint64_t* lastTicket)>;
  void enqueuePrepared(const Prepare& prepare, std::function<Status()> job);

 private:
  DeviceKind kind_;
  std::unique_ptr<StreamGate> gate_;
  std::mutex order_;  // the native stream's commands and the worker's jobs in one order
  CpuStream worker_;  // last: drains before the gate goes
};

}  // namespace hcl
