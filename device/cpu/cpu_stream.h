// A CPU stream: a worker thread that runs jobs in order.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "device/device.h"

namespace hcl {

class CpuStream final : public Stream {
 public:
  CpuStream();
  ~CpuStream() override;  // finishes queued work, then joins
  DeviceKind deviceKind() const override { return DeviceKind::Cpu; }
  void enqueue(std::function<Status()> job) override;
  Status synchronize() override;
  Status query() override;

 private:
  void run(std::stop_token stop);

  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::condition_variable idle_;
  std::deque<std::function<Status()>> jobs_;
  bool busy_ = false;
  Status firstError_;
  std::jthread worker_;  // last: starts after the members above exist
};

}  // namespace hcl
