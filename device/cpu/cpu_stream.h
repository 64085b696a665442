// A stream run by a host thread: jobs run in order on a worker. The CPU's
// streams are these; a GPU plugin uses one with its device made current on
// the worker (onStart), which is why this is all inline: plugins only use
// what headers define.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "device/device.h"

namespace hcl {

class CpuStream final : public Stream {
 public:
  explicit CpuStream(DeviceKind kind = DeviceKind::Cpu, std::function<Status()> onStart = {})
      : kind_(kind), onStart_(std::move(onStart)), worker_([this](std::stop_token st) { run(st); }) {}
  ~CpuStream() override {  // finishes queued work, then joins
    (void)synchronize();
    worker_.request_stop();
    wake_.notify_all();
  }
  DeviceKind deviceKind() const override { return kind_; }

  void enqueue(std::function<Status()> job) override {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

  Status synchronize() override {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
    Status s = firstError_;
    firstError_ = Status{};
    return s;
  }

  Status query() override {
    std::lock_guard lock(mutex_);
    if (!firstError_.ok()) return firstError_;
    if (!jobs_.empty() || busy_) return {hclInProgress, "work pending on the stream"};
    return {};
  }

  void waitForRoom(size_t maxPending) override {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return jobs_.size() + (busy_ ? 1 : 0) < maxPending; });
  }

 private:
  void run(std::stop_token stop) {
    // A failed start fails every job, so the error is not lost.
    const Status started = onStart_ ? onStart_() : Status{};
    std::unique_lock lock(mutex_);
    while (true) {
      if (!wake_.wait(lock, stop, [this] { return !jobs_.empty(); })) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      Status s = started.ok() ? job() : started;
      job = nullptr;  // destroy captures outside the lock
      lock.lock();
      busy_ = false;
      if (!s.ok() && firstError_.ok()) firstError_ = s;
      room_.notify_all();
      if (jobs_.empty()) idle_.notify_all();
    }
  }

  const DeviceKind kind_;
  std::function<Status()> onStart_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::condition_variable idle_;
  std::condition_variable room_;  // a job finished
  std::deque<std::function<Status()>> jobs_;
  bool busy_ = false;
  Status firstError_;
  std::jthread worker_;  // last: starts after the members above exist
};

}  // namespace hcl
