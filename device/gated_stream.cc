#include "device/gated_stream.h"

#include <algorithm>
#include <atomic>
#include <vector>

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
  GatedStream* self = this;
  enqueuePrepared(
      std::span<GatedStream* const>(&self, 1),
      [&prepare](std::span<StreamGate* const> gates, std::span<uint64_t> last) { prepare(*gates[0], &last[0]); },
      std::move(job));
}

void GatedStream::enqueuePrepared(std::span<GatedStream* const> streams, const PrepareAll& prepare,
                                  std::function<Status()> job) {
  // Locked in one global order, so launches over overlapping sets of
  // streams cannot deadlock here, and every worker sees them in one order.
  std::vector<GatedStream*> byAddress(streams.begin(), streams.end());
  std::sort(byAddress.begin(), byAddress.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (GatedStream* s : byAddress) locks.emplace_back(s->order_);

  struct Shared {
    std::atomic<bool> finished{false};
    Status result;
  };
  auto shared = std::make_shared<Shared>();
  std::vector<std::shared_ptr<PreparedEnd>> ends;
  for (size_t i = 0; i < streams.size(); ++i) ends.push_back(std::make_shared<PreparedEnd>());
  GatedStream* first = streams[0];
  first->worker_.enqueue([first, end = ends[0], shared, job = std::move(job)]() -> Status {
    shared->result = job();
    shared->finished.store(true, std::memory_order_release);
    shared->finished.notify_all();
    end->finish(*first->gate_);
    return shared->result;
  });
  for (size_t i = 1; i < streams.size(); ++i) {
    GatedStream* s = streams[i];
    s->worker_.enqueue([s, end = ends[i], shared]() -> Status {
      shared->finished.wait(false, std::memory_order_acquire);
      end->finish(*s->gate_);
      return shared->result;
    });
  }
  std::vector<StreamGate*> gates;
  for (GatedStream* s : streams) gates.push_back(s->gate_.get());
  std::vector<uint64_t> last(streams.size(), 0);
  prepare(gates, last);
  for (size_t i = 0; i < streams.size(); ++i) ends[i]->finish(*streams[i]->gate_, last[i]);
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
