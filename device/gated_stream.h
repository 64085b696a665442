// An HCL stream bound to a device runtime's own stream. Each job waits for
// the work enqueued on the native stream before it, runs on HCL's worker
// thread, and holds back the work enqueued on the native stream after it:
// NCCL's stream semantics, with the call returning at once.
#pragma once

#include <memory>

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

 private:
  DeviceKind kind_;
  std::unique_ptr<StreamGate> gate_;
  CpuStream worker_;  // last: drains before the gate goes
};

}  // namespace hcl
