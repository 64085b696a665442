#include "device/gpu/gpu_copy_queue.h"

#include "device/gpu/gpu_status.h"

namespace hcl::gpu {

Status GpuCopyQueue::create(int device, std::unique_ptr<CopyQueue>& out) {
  std::unique_ptr<GpuCopyQueue> q(new GpuCopyQueue(device));
  HCL_GPU_TRY(gpuSetDevice(device), GPU_FN("SetDevice"));
  HCL_GPU_TRY(gpuStreamCreateWithFlags(&q->stream_, gpuStreamNonBlocking), GPU_FN("StreamCreateWithFlags"));
  out = std::move(q);
  return {};
}

GpuCopyQueue::~GpuCopyQueue() {
  if (gpuSetDevice(device_) != gpuSuccess) return;  // no context left: nothing to free
  if (stream_) {
    (void)gpuStreamSynchronize(stream_);
    (void)gpuStreamDestroy(stream_);
  }
  for (auto& p : pending_) (void)gpuEventDestroy(p.event);
  for (auto ev : freeEvents_) (void)gpuEventDestroy(ev);
}

Status GpuCopyQueue::copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                            size_t height) {
  if (width == 0 || height == 0) return {};
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  if (height == 1)
    HCL_GPU_TRY(gpuMemcpyAsync(dst, src, width, gpuMemcpyDefault, stream_), GPU_FN("MemcpyAsync"));
  else
    HCL_GPU_TRY(gpuMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, height, gpuMemcpyDefault, stream_),
                GPU_FN("Memcpy2DAsync"));
  return {};
}

Status GpuCopyQueue::takeEvent(gpuEvent_t* ev) {
  if (!freeEvents_.empty()) {
    *ev = freeEvents_.back();
    freeEvents_.pop_back();
    return {};
  }
  return check(gpuEventCreateWithFlags(ev, gpuEventDisableTiming), GPU_FN("EventCreateWithFlags"));
}

Status GpuCopyQueue::mark(uint64_t* ticket) {
  std::lock_guard lock(mutex_);
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  gpuEvent_t ev;
  HCL_TRY(takeEvent(&ev));
  if (gpuError_t err = gpuEventRecord(ev, stream_); err != gpuSuccess) {
    freeEvents_.push_back(ev);
    return check(err, GPU_FN("EventRecord"));
  }
  *ticket = ++lastTicket_;
  pending_.push_back({*ticket, ev});
  return {};
}

Status GpuCopyQueue::poll(uint64_t ticket, bool* done) {
  std::lock_guard lock(mutex_);
  if (ticket == 0 || ticket > lastTicket_) return invalidArgument("CopyQueue::poll: unknown ticket");
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  // Tickets complete in order: retire from the front up to `ticket`.
  while (!pending_.empty() && pending_.front().ticket <= ticket) {
    const gpuError_t err = gpuEventQuery(pending_.front().event);
    if (err == gpuErrorNotReady) break;
    if (err != gpuSuccess) return check(err, GPU_FN("EventQuery"));
    completed_ = pending_.front().ticket;
    freeEvents_.push_back(pending_.front().event);
    pending_.pop_front();
  }
  *done = ticket <= completed_;
  return {};
}

Status GpuCopyQueue::drain() {
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  HCL_GPU_TRY(gpuStreamSynchronize(stream_), GPU_FN("StreamSynchronize"));
  std::lock_guard lock(mutex_);
  // Everything recorded before the synchronize has completed.
  while (!pending_.empty() && gpuEventQuery(pending_.front().event) == gpuSuccess) {
    completed_ = pending_.front().ticket;
    freeEvents_.push_back(pending_.front().event);
    pending_.pop_front();
  }
  return {};
}

}  // namespace hcl::gpu
