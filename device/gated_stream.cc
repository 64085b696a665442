#include "device/gated_stream.h"

#include <algorithm>
#include <condition_variable>

#include "core/deadline.h"

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
  // A job that failed may not have released the tickets prepare issued so
  // far; with the native stream's command queue full, prepare then blocks
  // until the stream moves, and nothing else would let it move. So until
  // prepare is done, the failed job's side releases whatever it issued.
  // The check and the release are one step under the lock, so nothing is
  // released once prepareDone has returned (the tail is marked after it).
  void jobDone(StreamGate& gate, bool failed) {
    if (failed) {
      Backoff backoff;
      for (;;) {
        {
          std::lock_guard lock(mutex_);
          if (prepared_) break;
          if (const uint64_t t = gate.lastIssued()) gate.release(t);
        }
        backoff.pause();
      }
    }
    finish(gate, 0);
  }
  void prepareDone(StreamGate& gate, uint64_t last) {
    {
      std::lock_guard lock(mutex_);
      prepared_ = true;
    }
    finish(gate, last);
  }

  // The launch's tail: a mark after everything prepare issued, 0 if none
  // could be made. Marked after prepareDone, so that a failed job's side
  // never releases it.
  void tailMarked(uint64_t tail) {
    {
      std::lock_guard lock(mutex_);
      tail_ = tail;
      tailKnown_ = true;
    }
    tailChanged_.notify_all();
  }
  // Waits until the native stream has run everything of the launch: its
  // last commands (copies back, IPC segments) read memory of the launch's
  // communicator, which the job's end may free.
  void awaitTail(StreamGate& gate) {
    uint64_t tail = 0;
    {
      std::unique_lock lock(mutex_);
      tailChanged_.wait(lock, [this] { return tailKnown_; });
      tail = tail_;
    }
    if (tail == 0) return;
    (void)gate.waitStart(tail);  // a failure here is the stream's, reported by its synchronize
    gate.release(tail);
  }

 private:
  void finish(StreamGate& gate, uint64_t last) {
    std::lock_guard lock(mutex_);
    if (last) last_ = last;
    if (++finished_ == 2 && last_) gate.release(last_);
  }

  std::mutex mutex_;
  bool prepared_ = false;
  std::condition_variable tailChanged_;
  int finished_ = 0;
  uint64_t last_ = 0;
  uint64_t tail_ = 0;
  bool tailKnown_ = false;
};

}  // namespace

void GatedStream::enqueuePrepared(const Prepare& prepare, std::function<Status()> job) {
  std::vector<std::function<Status()>> jobs;
  jobs.push_back(std::move(job));
  enqueueJoined(
      {this}, [&](const std::vector<StreamGate*>& gates, std::vector<uint64_t>& last) { prepare(*gates[0], &last[0]); },
      std::move(jobs));
}

void GatedStream::enqueueJoined(const std::vector<GatedStream*>& streams, const JoinedPrepare& prepare,
                                std::vector<std::function<Status()>> jobs) {
  // Taken in one global order, so two launches over the same streams cannot
  // each hold one lock and wait for the other's.
  std::vector<GatedStream*> byAddress = streams;
  std::sort(byAddress.begin(), byAddress.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (GatedStream* s : byAddress) locks.emplace_back(s->order_);
  std::vector<std::shared_ptr<PreparedEnd>> ends;
  std::vector<StreamGate*> gates;
  ends.reserve(streams.size());
  gates.reserve(streams.size());
  std::vector<uint64_t> last(streams.size(), 0);
  try {
    for (size_t i = 0; i < streams.size(); ++i) {
      GatedStream* stream = streams[i];
      auto end = std::make_shared<PreparedEnd>();
      stream->worker_.enqueue([stream, end, job = std::move(jobs[i])]() -> Status {
        Status s = job();
        end->jobDone(*stream->gate_, !s.ok());
        end->awaitTail(*stream->gate_);
        return s;
      });
      ends.push_back(std::move(end));
      gates.push_back(stream->gate_.get());
    }
    prepare(gates, last);
  } catch (...) {
    // Out of memory: the jobs already queued must still end. They get what
    // was issued, and no tail to wait for.
    for (size_t i = 0; i < ends.size(); ++i) {
      ends[i]->prepareDone(*gates[i], last[i]);
      ends[i]->tailMarked(0);
    }
    throw;
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    ends[i]->prepareDone(*gates[i], last[i]);
    uint64_t tail = 0;
    if (!gates[i]->mark(&tail).ok()) tail = 0;
    ends[i]->tailMarked(tail);
  }
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
