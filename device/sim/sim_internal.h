// Pieces of the sim device shared between its files.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "device/device.h"
#include "device/gate_waits.h"
#include "device/sim/sim_device.h"
#include "device/sim/sim_memory.h"

namespace hcl::sim {

// What the streams of one sim device share. A GPU whose streams share one
// hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) runs its streams' commands
// in the order they were issued, so a stream stopped on a memory wait holds
// back every later command of any stream. With HCL_SIM_SHARED_QUEUE=1 the
// sim device's gates run their commands so, its copy queues start no copy
// while a stream waits, and a synchronous device copy from a host thread
// then fails: to catch designs that need the device while a native stream
// waits for them.
class HardwareQueue {
 public:
  void stop();    // a native stream starts waiting
  void resume();  // and stops
  void waitUntilFlowing();  // a copy about to start
  bool stopped();           // whether a native stream waits now

  // Stream commands run one at a time, in the order they were issued over
  // all of the device's streams, as on a GPU with one hardware queue: a
  // command takes its turn when issued, awaits it before it runs, and
  // leaves it when done.
  uint64_t takeTurn();
  void awaitTurn(uint64_t turn);
  void leaveTurn(uint64_t turn);

  // Waits on gate tickets not yet released, over all the device's gates
  // (counted with or without HCL_SIM_SHARED_QUEUE): IPC close refuses to run
  // while there are any, as a GPU's would wait for them (gate_waits.h).
  const std::shared_ptr<PendingWaits> pendingWaits = std::make_shared<PendingWaits>();

 private:
  std::mutex mutex_;
  std::condition_variable resumed_, turned_;
  int stopped_ = 0;
  uint64_t issued_ = 0, ran_ = 0;
};

// Whether the calling thread runs a native stream's commands.
bool onNativeStream();

std::unique_ptr<CopyQueue> makeCopyQueue(const MemoryMap& memory, HardwareQueue& hardware);
std::unique_ptr<StreamGate> makeGate(NativeStream& stream, const MemoryMap& memory, HardwareQueue& hardware);
// A gate that owns its stream.
std::unique_ptr<StreamGate> makeOwningGate(std::unique_ptr<NativeStream> stream, const MemoryMap& memory,
                                           HardwareQueue& hardware);

}  // namespace hcl::sim
