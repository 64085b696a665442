// A stand-in GPU for tests, always built. Its memory is scrambled host memory
// (sim_memory.h), its copy engine a worker thread that can be slowed to a
// set rate (HCL_SIM_COPY_GBPS), and its native streams are in-order queues
// of host jobs, so the staged path, stream ordering and mixed communicators
// are exercised on machines without a GPU. Select it with HCL_DEVICE=sim.
#pragma once

#include <functional>
#include <memory>

#include "device/device.h"

namespace hcl::sim {

// A native stream of the sim device (what a cudaStream_t is to CUDA): tasks
// run in order on a worker thread.
class NativeStream {
 public:
  NativeStream();
  ~NativeStream();
  void launch(std::function<void()> task);
  void synchronize();
  bool idle();
  Stream& queue() { return *queue_; }

 private:
  std::unique_ptr<Stream> queue_;
};

DeviceRuntime& runtime();

}  // namespace hcl::sim
