// StreamGate on a native stream: mark() records an event, waitFor() makes the
// stream wait until a host flag in pinned mapped memory reaches the ticket;
// release() stores the ticket into the flag. The wait is a stream memory
// operation where the runtime has one (cuStreamWaitValue64 through the driver
// entry point, hipStreamWaitValue64), a one-thread spinning kernel otherwise.
#pragma once

#include <deque>
#include <mutex>
#include <vector>

#include "device/device.h"
#include "device/gate_waits.h"
#include "device/gpu/gpu_api.h"

namespace hcl::gpu {

// How the stream waits for the flag; picked once per device.
struct GateWaitMethod {
  // Enqueues "wait until *flag >= value" on the stream; nullptr: use the
  // spin kernel. `devFlag` is the device view of the flag.
  gpuError_t (*waitValue)(gpuStream_t stream, void* devFlag, uint64_t value) = nullptr;
  const char* name = "spin kernel";
};
GateWaitMethod pickGateWaitMethod(int device);

class GpuStreamGate final : public StreamGate {
 public:
  static Status open(int device, void* nativeStream, const GateWaitMethod& method,
                     std::shared_ptr<PendingWaits> waits, std::unique_ptr<StreamGate>& out);
  // A gate on a new non-blocking stream that it destroys with itself.
  static Status openPrivate(int device, const GateWaitMethod& method, std::shared_ptr<PendingWaits> waits,
                            std::unique_ptr<StreamGate>& out);
  ~GpuStreamGate() override;

  Status mark(uint64_t* ticket) override;
  Status waitFor(uint64_t ticket) override;
  Status copyOnStream(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                      size_t height) override;
  Status segmentsOnStream(const IpcSegment* table, size_t n, size_t width, const ReduceSpec& spec) override;
  Status pollStart(uint64_t ticket, bool* done) override;
  Status waitStart(uint64_t ticket) override;
  void release(uint64_t ticket) override;
  uint64_t lastIssued() override;
  Status synchronize() override;
  Status query() override;

 private:
  GpuStreamGate(int device, gpuStream_t stream, const GateWaitMethod& m, std::shared_ptr<PendingWaits> waits)
      : device_(device), stream_(stream), method_(m), waits_(std::move(waits)) {}
  Status takeEvent(gpuEvent_t* ev);
  gpuEvent_t eventOf(uint64_t ticket);

  struct Held {
    uint64_t ticket;
    gpuEvent_t start;
  };

  const int device_;
  const gpuStream_t stream_;  // the user's (never destroyed here), or the gate's own
  bool ownsStream_ = false;
  const GateWaitMethod method_;
  GateWaits waits_;  // this gate's share of the device's pending waits
  uint64_t* flag_ = nullptr;  // pinned, mapped; host view
  void* devFlag_ = nullptr;   // device view of flag_
  // Issuing commands may block the caller while the stream's command queue
  // is full, until the stream moves, which takes the worker's release(): so
  // issuers hold issue_ across the driver calls, and mutex_ (which release
  // and the worker's lookups take) is never held across one.
  std::mutex issue_;
  std::mutex mutex_;  // lastTicket_, held_, freeEvents_
  uint64_t lastTicket_ = 0;
  std::deque<Held> held_;  // tickets issued and not yet released, increasing
  std::vector<gpuEvent_t> freeEvents_;
};

}  // namespace hcl::gpu
