// A stand-in GPU for tests, always built. Its memory is scrambled host memory
// (sim_memory.h), its copy engine a worker thread that can be slowed to a
// set rate (HCL_SIM_COPY_GBPS), and its native streams are in-order queues
// of host jobs, so the staged path, stream ordering and mixed communicators
// are exercised on machines without a GPU. Select it with HCL_DEVICE=sim.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>

#include "device/device.h"

namespace hcl::sim {

// A native stream of the sim device (what a cudaStream_t is to CUDA): tasks
// run in order on a worker thread. With a depth, launch() blocks while that
// many tasks are pending, as a GPU runtime's launches block on a full
// command queue.
class NativeStream {
 public:
  explicit NativeStream(size_t depth = 0);
  ~NativeStream();
  void launch(std::function<void()> task);
  void synchronize();
  bool idle();
  Stream& queue() { return *queue_; }

 private:
  const size_t depth_;
  std::mutex mutex_;
  std::condition_variable drained_;
  size_t pending_ = 0;
  std::unique_ptr<Stream> queue_;  // last: its worker stops before the members above go
};

DeviceRuntime& runtime();

}  // namespace hcl::sim
