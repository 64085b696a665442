#include "device/cpu/cpu_stream.h"

namespace hcl {

CpuStream::CpuStream() : worker_([this](std::stop_token st) { run(st); }) {}

CpuStream::~CpuStream() {
  (void)synchronize();
  worker_.request_stop();
  wake_.notify_all();
}

void CpuStream::enqueue(std::function<Status()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void CpuStream::run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (!wake_.wait(lock, stop, [this] { return !jobs_.empty(); })) return;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    Status s = job();
    lock.lock();
    busy_ = false;
    if (!s.ok() && firstError_.ok()) firstError_ = s;
    if (jobs_.empty()) idle_.notify_all();
  }
}

Status CpuStream::synchronize() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
  Status s = firstError_;
  firstError_ = Status{};
  return s;
}

Status CpuStream::query() {
  std::lock_guard lock(mutex_);
  if (!firstError_.ok()) return firstError_;
  if (!jobs_.empty() || busy_) return {hclInProgress, "work pending on the stream"};
  return {};
}

}  // namespace hcl
