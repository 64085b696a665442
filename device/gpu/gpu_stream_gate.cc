#include "device/gpu/gpu_stream_gate.h"

#include <cstdlib>
#include <cstring>

#include "device/gpu/gpu_kernels.h"
#include "device/gpu/gpu_status.h"

#ifndef HCL_GPU_HIP
#include <cuda.h>  // types and constants only: the driver is reached through cudaGetDriverEntryPoint
#endif

namespace hcl::gpu {
namespace {

// HCL_GPU_GATE=spin forces the spin kernel; =wait forces the memory wait even
// where the device does not claim support (for experiments).
const char* gateOverride() {
  const char* v = std::getenv("HCL_GPU_GATE");
  return v ? v : "";
}

#ifdef HCL_GPU_HIP

gpuError_t hipWaitValue(gpuStream_t stream, void* devFlag, uint64_t value) {
  return hipStreamWaitValue64(stream, devFlag, value, hipStreamWaitValueGte);
}

#else

using WaitValue64Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
WaitValue64Fn gWaitValue64 = nullptr;

gpuError_t cudaWaitValue(gpuStream_t stream, void* devFlag, uint64_t value) {
  const CUresult r = gWaitValue64(reinterpret_cast<CUstream>(stream),
                                  reinterpret_cast<CUdeviceptr>(devFlag), value, CU_STREAM_WAIT_VALUE_GEQ);
  // The driver's codes are not the runtime's; any failure reads as a launch failure.
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
}

#endif

}  // namespace

GateWaitMethod pickGateWaitMethod(int device) {
  const std::string force = gateOverride();
  if (force == "spin") return {};
#ifdef HCL_GPU_HIP
  int canWait = 0;
  if (hipDeviceGetAttribute(&canWait, hipDeviceAttributeCanUseStreamWaitValue, device) != hipSuccess)
    (void)hipGetLastError();
  if (canWait || force == "wait") return {&hipWaitValue, "hipStreamWaitValue64"};
  return {};
#else
  int can64 = 0;
  // CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS; the runtime passes the value through.
  if (cudaDeviceGetAttribute(&can64, static_cast<cudaDeviceAttr>(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS),
                             device) != cudaSuccess) {
    (void)cudaGetLastError();
    can64 = 0;
  }
  if (!can64 && force != "wait") return {};
  static std::once_flag once;
  std::call_once(once, [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      gWaitValue64 = reinterpret_cast<WaitValue64Fn>(fn);
    else
      (void)cudaGetLastError();
  });
  if (!gWaitValue64) return {};
  return {&cudaWaitValue, "cuStreamWaitValue64"};
#endif
}

Status GpuStreamGate::open(int device, void* nativeStream, const GateWaitMethod& method,
                           std::shared_ptr<PendingWaits> waits, std::unique_ptr<StreamGate>& out) {
  std::unique_ptr<GpuStreamGate> g(
      new GpuStreamGate(device, static_cast<gpuStream_t>(nativeStream), method, std::move(waits)));
  HCL_GPU_TRY(gpuSetDevice(device), GPU_FN("SetDevice"));
  void* p = nullptr;
  HCL_GPU_TRY(gpuHostAlloc(&p, sizeof(uint64_t), gpuHostAllocPortable | gpuHostAllocMapped), GPU_FN("HostAlloc"));
  g->flag_ = static_cast<uint64_t*>(p);
  __atomic_store_n(g->flag_, uint64_t(0), __ATOMIC_RELEASE);
  HCL_GPU_TRY(gpuHostGetDevicePointer(&g->devFlag_, p, 0), GPU_FN("HostGetDevicePointer"));
  out = std::move(g);
  return {};
}

Status GpuStreamGate::openPrivate(int device, const GateWaitMethod& method, std::shared_ptr<PendingWaits> waits,
                                  std::unique_ptr<StreamGate>& out) {
  HCL_GPU_TRY(gpuSetDevice(device), GPU_FN("SetDevice"));
  gpuStream_t stream = nullptr;
  HCL_GPU_TRY(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking), GPU_FN("StreamCreateWithFlags"));
  Status s = open(device, stream, method, std::move(waits), out);
  if (!s.ok()) {
    (void)gpuStreamDestroy(stream);
    return s;
  }
  static_cast<GpuStreamGate&>(*out).ownsStream_ = true;
  return {};
}

GpuStreamGate::~GpuStreamGate() {
  if (gpuSetDevice(device_) != gpuSuccess) return;
  if (flag_) {
    // Let anything still gated run, then wait for it before the flag goes.
    __atomic_store_n(flag_, ~uint64_t(0) >> 1, __ATOMIC_RELEASE);
    (void)gpuStreamSynchronize(stream_);
    (void)gpuFreeHost(flag_);
  }
  if (ownsStream_) (void)gpuStreamDestroy(stream_);
  for (auto& h : held_) (void)gpuEventDestroy(h.start);
  for (auto ev : freeEvents_) (void)gpuEventDestroy(ev);
}

Status GpuStreamGate::takeEvent(gpuEvent_t* ev) {
  {
    std::lock_guard lock(mutex_);
    if (!freeEvents_.empty()) {
      *ev = freeEvents_.back();
      freeEvents_.pop_back();
      return {};
    }
  }
  return check(gpuEventCreateWithFlags(ev, gpuEventDisableTiming | gpuEventBlockingSync),
               GPU_FN("EventCreateWithFlags"));
}

Status GpuStreamGate::mark(uint64_t* ticket) {
  std::lock_guard issuing(issue_);
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  gpuEvent_t ev;
  HCL_TRY(takeEvent(&ev));
  if (gpuError_t err = gpuEventRecord(ev, stream_); err != gpuSuccess) {
    std::lock_guard lock(mutex_);
    freeEvents_.push_back(ev);
    return check(err, GPU_FN("EventRecord"));
  }
  std::lock_guard lock(mutex_);
  const uint64_t t = ++lastTicket_;
  held_.push_back({t, ev});
  *ticket = t;
  return {};
}

Status GpuStreamGate::waitFor(uint64_t ticket) {
  std::lock_guard issuing(issue_);
  const auto deviceWide = waits_.issuing();
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  const gpuError_t err = method_.waitValue ? method_.waitValue(stream_, devFlag_, ticket)
                                           : launchSpinWait(static_cast<volatile uint64_t*>(devFlag_), ticket, stream_);
  if (err == gpuSuccess) waits_.waited(ticket);
  return check(err, method_.waitValue ? method_.name : "spin-wait kernel launch");
}

Status GpuStreamGate::copyOnStream(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                                   size_t height) {
  if (width == 0 || height == 0) return {};
  std::lock_guard issuing(issue_);
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  HCL_GPU_TRY(gpuMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, height, gpuMemcpyDefault, stream_),
              GPU_FN("Memcpy2DAsync"));
  return {};
}

Status GpuStreamGate::segmentsOnStream(const IpcSegment* table, size_t n, size_t width, const ReduceSpec& spec) {
  if (n == 0) return {};
  ElementParams p;
  p.nranks = spec.nranks;
  p.divide = spec.kind == ReduceKind::Avg;
  p.scale = spec.kind == ReduceKind::PreMulSum;
  p.scalarFloat = spec.scalarFloat;
  p.scalarInt = spec.scalarInt;
  p.scalarUint = spec.scalarUint;
  std::lock_guard issuing(issue_);
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  HCL_GPU_TRY(launchSegments(spec.type, spec.kind, table, n, width, p, stream_), "IPC segment kernel launch");
  return {};
}

gpuEvent_t GpuStreamGate::eventOf(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  // Tickets are consecutive and released from the front: held_ is indexed by them.
  if (held_.empty() || ticket < held_.front().ticket) return nullptr;
  const uint64_t i = ticket - held_.front().ticket;
  return i < held_.size() ? held_[static_cast<size_t>(i)].start : nullptr;
}

Status GpuStreamGate::pollStart(uint64_t ticket, bool* done) {
  gpuEvent_t ev = eventOf(ticket);
  if (!ev) return invalidUsage("StreamGate::pollStart: ticket " + std::to_string(ticket) + " is not held");
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  const gpuError_t err = gpuEventQuery(ev);
  *done = err == gpuSuccess;
  if (err == gpuErrorNotReady) return {};
  return check(err, GPU_FN("EventQuery"));
}

Status GpuStreamGate::waitStart(uint64_t ticket) {
  gpuEvent_t ev = eventOf(ticket);
  if (!ev) return invalidUsage("StreamGate::waitStart: ticket " + std::to_string(ticket) + " is not held");
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  // The event stays in held_ until release(), so it cannot be reused meanwhile.
  HCL_GPU_TRY(gpuEventSynchronize(ev), GPU_FN("EventSynchronize"));
  return {};
}

void GpuStreamGate::release(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  // The flag only grows, so an out-of-order or repeated release never lowers it.
  uint64_t cur = __atomic_load_n(flag_, __ATOMIC_ACQUIRE);
  while (cur < ticket && !__atomic_compare_exchange_n(flag_, &cur, ticket, false, __ATOMIC_RELEASE,
                                                      __ATOMIC_ACQUIRE)) {
  }
  waits_.released(ticket);
  while (!held_.empty() && held_.front().ticket <= ticket) {
    freeEvents_.push_back(held_.front().start);
    held_.pop_front();
  }
}

uint64_t GpuStreamGate::lastIssued() {
  std::lock_guard lock(mutex_);
  return lastTicket_;
}

Status GpuStreamGate::synchronize() {
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  HCL_GPU_TRY(gpuStreamSynchronize(stream_), GPU_FN("StreamSynchronize"));
  return {};
}

Status GpuStreamGate::query() {
  HCL_GPU_TRY(gpuSetDevice(device_), GPU_FN("SetDevice"));
  const gpuError_t err = gpuStreamQuery(stream_);
  if (err == gpuErrorNotReady) return {hclInProgress, "work pending on the stream"};
  return check(err, GPU_FN("StreamQuery"));
}

}  // namespace hcl::gpu
