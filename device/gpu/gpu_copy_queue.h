// CopyQueue on a non-blocking stream of the runtime; tickets are events.
#pragma once

#include <deque>
#include <mutex>
#include <vector>

#include "device/device.h"
#include "device/gpu/gpu_api.h"

namespace hcl::gpu {

class GpuCopyQueue final : public CopyQueue {
 public:
  static Status create(int device, std::unique_ptr<CopyQueue>& out);
  ~GpuCopyQueue() override;

  Status copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                size_t height) override;
  Status mark(uint64_t* ticket) override;
  Status poll(uint64_t ticket, bool* done) override;
  Status drain() override;

 private:
  explicit GpuCopyQueue(int device) : device_(device) {}
  Status takeEvent(gpuEvent_t* ev);

  struct Pending {
    uint64_t ticket;
    gpuEvent_t event;
  };

  const int device_;
  gpuStream_t stream_ = nullptr;
  std::mutex mutex_;
  uint64_t lastTicket_ = 0;
  uint64_t completed_ = 0;          // every ticket <= this has completed
  std::deque<Pending> pending_;     // increasing tickets
  std::vector<gpuEvent_t> freeEvents_;
};

}  // namespace hcl::gpu
