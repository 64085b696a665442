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

namespace {

// Releases the last ticket once both the job and prepare are done.
class PreparedEnd {
 public:
  void finish(StreamGate& gate, uint64_t last = 0) {
    std::lock_guard lock(mutex_);
    if (last) last_ = last;
    if (++finished_ == 2 && last_) gate.release(last_);
  }

 private:
  std::mutex mutex_;
  int finished_ = 0;
  uint64_t last_ = 0;
};

}  // namespace

void GatedStream::enqueuePrepared(const Prepare& prepare, std::function<Status()> job) {
  std::lock_guard lock(order_);
  auto end = std::make_shared<PreparedEnd>();
  worker_.enqueue([this, end, job = std::move(job)]() -> Status {
    Status s = job();
    end->finish(*gate_);
    return s;
  });
  uint64_t last = 0;
  prepare(*gate_, &last);
  end->finish(*gate_, last);
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
