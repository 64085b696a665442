#include "device/gated_stream.h"

namespace hcl {

GatedStream::GatedStream(DeviceKind kind, std::unique_ptr<StreamGate> gate) : kind_(kind), gate_(std::move(gate)) {}

GatedStream::~GatedStream() { (void)worker_.synchronize(); }

void GatedStream::enqueue(std::function<Status()> job) {
  std::lock_guard lock(order_);
  uint64_t ticket = 0;
  Status held = gate_->hold(&ticket);
  worker_.enqueue([this, held, ticket, job = std::move(job)]() -> Status {
    if (!held.ok()) return held;
    Status s = gate_->waitStart(ticket);
    if (s.ok()) s = job();
    gate_->release(ticket);
    return s;
  });
}

void GatedStream::enqueuePrepared(const Prepare& prepare, std::function<Status()> job) {
  std::lock_guard lock(order_);
  uint64_t last = 0;
  Status prepared = prepare(*gate_, &last);
  worker_.enqueue([this, prepared, last, job = std::move(job)]() -> Status {
    Status s = prepared.ok() ? job() : prepared;
    if (last) gate_->release(last);
    return s;
  });
}

Status GatedStream::synchronize() {
  Status s = worker_.synchronize();
  Status n = gate_->synchronize();
  return s.ok() ? n : s;
}

Status GatedStream::query() {
  Status s = worker_.query();
  if (!s.ok()) return s;
  return gate_->query();
}

}  // namespace hcl
