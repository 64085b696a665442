#include "device/gpu/gpu_device.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "device/gpu/gpu_copy_queue.h"
#include "device/cpu/cpu_stream.h"
#include "device/gpu/gpu_kernels.h"
#include "device/gpu/gpu_status.h"

#ifndef HCL_GPU_HIP
#include <cuda.h>  // types only: the driver is reached through cudaGetDriverEntryPoint
#endif

namespace hcl::gpu {
namespace {

bool isDirectType(hclDataType_t t) { return dataTypeSize(t) == accumulatorSize(t); }

Status validate(const ReduceSpec& spec, const char* what) {
  if (!isValidDataType(spec.type))
    return invalidArgument(std::string(what) + ": invalid data type " + std::to_string(int(spec.type)));
  if (spec.nranks < 1) return invalidArgument(std::string(what) + ": nranks must be >= 1");
  return {};
}

ElementParams makeParams(const ReduceSpec& spec, Form dst, Form a, Form b) {
  ElementParams p;
  p.scalarFloat = spec.scalarFloat;
  p.scalarInt = spec.scalarInt;
  p.scalarUint = spec.scalarUint;
  p.nranks = spec.nranks;
  p.scale = spec.kind == ReduceKind::PreMulSum;
  p.divide = spec.kind == ReduceKind::Avg;
  p.dstNative = dst == Form::Native;
  p.aNative = a == Form::Native;
  p.bNative = b == Form::Native;
  return p;
}

// Splits [0, n) into ranges that one kernel each may process in place when
// the destination (elements of d bytes) exactly aliases an operand of s-byte
// elements: no thread's write may overlap another thread's read. Widening
// (d > s) goes from the top down, narrowing from the bottom up.
template <class Fn>
gpuError_t forEachSafeRange(size_t n, size_t d, size_t s, Fn&& fn) {
  if (d == s) return fn(size_t(0), n);
  if (d > s) {
    size_t end = n;
    while (end > 0) {
      size_t begin = (s * end + d - 1) / d;  // d*begin >= s*end
      if (begin >= end) begin = end - 1;     // one element: one thread reads, then writes
      if (gpuError_t err = fn(begin, end); err != gpuSuccess) return err;
      end = begin;
    }
  } else {
    size_t begin = 0;
    while (begin < n) {
      size_t end = std::min(n, s * begin / d);  // d*end <= s*begin
      if (end <= begin) end = begin + 1;
      if (gpuError_t err = fn(begin, end); err != gpuSuccess) return err;
      begin = end;
    }
  }
  return gpuSuccess;
}

#ifndef HCL_GPU_HIP
using GetAddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
GetAddressRangeFn gGetAddressRange = nullptr;

Status cudaAddressRange(const void* ptr, void** base, size_t* bytes) {
  CUdeviceptr b = 0;
  size_t size = 0;
  if (gGetAddressRange(&b, &size, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) {
    return invalidArgument("CUDA: cuMemGetAddressRange: the pointer is not device memory of the current context");
  }
  *base = reinterpret_cast<void*>(b);
  *bytes = size;
  return {};
}
#else
Status hipAddressRange(const void* ptr, void** base, size_t* bytes) {
  hipDeviceptr_t b = nullptr;
  size_t size = 0;
  HCL_GPU_TRY(hipMemGetAddressRange(&b, &size, const_cast<void*>(ptr)), "hipMemGetAddressRange");
  *base = b;
  *bytes = size;
  return {};
}
#endif

AddressRangeFn pickAddressRange(std::string* why) {
#ifdef HCL_GPU_HIP
  (void)why;
  return &hipAddressRange;
#else
  static std::once_flag once;
  std::call_once(once, [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      gGetAddressRange = reinterpret_cast<GetAddressRangeFn>(fn);
    else
      (void)cudaGetLastError();
  });
  if (!gGetAddressRange) {
    *why = "the driver has no cuMemGetAddressRange entry point";
    return nullptr;
  }
  return &cudaAddressRange;
#endif
}

constexpr size_t kIpcGranule = size_t{2} << 20;

bool pathExists(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0;
}

}  // namespace

Status GpuDevice::create(int index, std::unique_ptr<GpuDevice>& out) {
  std::unique_ptr<GpuDevice> d(new GpuDevice(index));
  HCL_TRY(d->bind());
  HCL_GPU_TRY(gpuStreamCreateWithFlags(&d->stream_, gpuStreamNonBlocking), GPU_FN("StreamCreateWithFlags"));
  HCL_GPU_TRY(preloadKernels(), "loading the plugin's kernels");
  d->gateWait_ = pickGateWaitMethod(index);
  d->addressRange_ = pickAddressRange(&d->addressRangeWhy_);
  out = std::move(d);
  return {};
}

GpuDevice::~GpuDevice() {
  // Devices live as long as the process; at exit the runtime may be gone already.
  if (stream_ && gpuSetDevice(index_) == gpuSuccess) (void)gpuStreamDestroy(stream_);
}

Status GpuDevice::bind() const { return check(gpuSetDevice(index_), GPU_FN("SetDevice")); }

Status GpuDevice::finish(const char* what) {
  return check(gpuStreamSynchronize(stream_), GPU_FN("StreamSynchronize")).withContext(what);
}

bool GpuDevice::isDeviceMemory(const void* ptr) const {
  if (!ptr) return false;
  gpuPointerAttributes attr{};
  if (gpuPointerGetAttributes(&attr, ptr) != gpuSuccess) {
    (void)gpuGetLastError();  // unknown host pointers are an error on older runtimes
    return false;
  }
  return gpuPointerIsDevice(attr) && gpuPointerDevice(attr) == index_;
}

Status GpuDevice::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return {};
  HCL_TRY(bind());
  HCL_GPU_TRY(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, stream_), GPU_FN("MemcpyAsync"));
  return finish("copy");
}

Status GpuDevice::reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
                         size_t count, const ReduceSpec& spec) {
  HCL_TRY(validate(spec, "reduce"));
  if (count == 0) return {};
  HCL_TRY(bind());
  const ElementParams p = makeParams(spec, dstForm, aForm, bForm);
  const size_t d = formElementSize(spec.type, dstForm);
  size_t s = d;
  if (dst == a && formElementSize(spec.type, aForm) != d) s = formElementSize(spec.type, aForm);
  if (dst == b && formElementSize(spec.type, bForm) != d) s = formElementSize(spec.type, bForm);
  const gpuError_t err = forEachSafeRange(count, d, s, [&](size_t begin, size_t end) {
    return launchReduce(spec.type, spec.kind, dst, a, b, begin, end, p, stream_);
  });
  HCL_GPU_TRY(err, "reduce kernel launch");
  return finish("reduce");
}

Status GpuDevice::convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                          const ReduceSpec& spec) {
  HCL_TRY(validate(spec, "convert"));
  if (count == 0) return {};
  HCL_TRY(bind());
  const ElementParams p = makeParams(spec, dstForm, srcForm, srcForm);
  const bool scale = p.scale && srcForm == Form::Native;
  const bool divide = p.divide && dstForm == Form::Native;
  const bool sameLayout = isDirectType(spec.type) || (dstForm == Form::Acc && srcForm == Form::Acc);
  if (!scale && !divide && sameLayout) {
    if (dst == src) return {};
    HCL_GPU_TRY(gpuMemcpyAsync(dst, src, count * formElementSize(spec.type, dstForm), gpuMemcpyDefault, stream_),
                GPU_FN("MemcpyAsync"));
    return finish("convert");
  }
  const size_t d = formElementSize(spec.type, dstForm);
  const size_t s = dst == src ? formElementSize(spec.type, srcForm) : d;
  const gpuError_t err = forEachSafeRange(count, d, s, [&](size_t begin, size_t end) {
    return launchConvert(spec.type, dst, src, begin, end, p, stream_);
  });
  HCL_GPU_TRY(err, "convert kernel launch");
  return finish("convert");
}

Status GpuDevice::allocDevice(size_t bytes, void** ptr) {
  HCL_TRY(bind());
  HCL_GPU_TRY(gpuMalloc(ptr, bytes), GPU_FN("Malloc"));
  return {};
}

Status GpuDevice::freeDevice(void* ptr) {
  if (!ptr) return {};
  HCL_TRY(bind());
  HCL_GPU_TRY(gpuFree(ptr), GPU_FN("Free"));
  return {};
}

Status GpuDevice::allocPinned(size_t bytes, void** ptr) {
  HCL_TRY(bind());
  HCL_GPU_TRY(gpuHostAlloc(ptr, bytes, gpuHostAllocPortable | gpuHostAllocMapped), GPU_FN("HostAlloc"));
  return {};
}

Status GpuDevice::freePinned(void* ptr) {
  if (!ptr) return {};
  HCL_TRY(bind());
  HCL_GPU_TRY(gpuFreeHost(ptr), GPU_FN("FreeHost"));
  return {};
}

Status GpuDevice::createCopyQueue(std::unique_ptr<CopyQueue>& out) { return GpuCopyQueue::create(index_, out); }

Status GpuDevice::openGate(void* nativeStream, std::unique_ptr<StreamGate>& out) {
  return GpuStreamGate::open(index_, nativeStream, gateWait_, pendingWaits_, out);
}

Status GpuDevice::openPrivateGate(std::unique_ptr<StreamGate>& out) {
  return GpuStreamGate::openPrivate(index_, gateWait_, pendingWaits_, out);
}

bool GpuDevice::ipcSupported(std::string* whyNot) const {
  if (!addressRange_) {
    *whyNot = std::string(kRuntimeName) + ": no way to find an allocation's base (" + addressRangeWhy_ + ")";
    return false;
  }
  return true;
}

Status GpuDevice::ipcExport(const void* ptr, DeviceIpcHandle* handle, uint64_t* offset) {
  HCL_TRY(bind());
  void* base = nullptr;
  size_t bytes = 0;
  HCL_TRY(addressRange_(ptr, &base, &bytes));
  // The runtime packs small allocations into shared blocks and maps a whole
  // block into an importer: two of them from one block cannot both be
  // opened there ("already mapped", seen on an H100). Such buffers go
  // through the IPC path's stand-ins instead, which are whole blocks.
  if (bytes < kIpcGranule) {
    return invalidArgument("the allocation is smaller than the runtime's IPC granule");
  }
  gpuIpcMemHandle_t h;
  if (gpuError_t err = gpuIpcGetMemHandle(&h, base); err != gpuSuccess) {
    (void)gpuGetLastError();  // not sticky; a later launch check must not see it
    return check(err, GPU_FN("IpcGetMemHandle"));
  }
  static_assert(sizeof(h) <= sizeof(handle->bytes));
  *handle = {};
  std::memcpy(handle->bytes, &h, sizeof(h));
  *offset = static_cast<uint64_t>(static_cast<const char*>(ptr) - static_cast<const char*>(base));
  return {};
}

Status GpuDevice::ipcOpen(const DeviceIpcHandle& handle, void** base) {
  HCL_TRY(bind());
  gpuIpcMemHandle_t h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  HCL_GPU_TRY(gpuIpcOpenMemHandle(base, h, gpuIpcMemLazyEnablePeerAccess), GPU_FN("IpcOpenMemHandle"));
  return {};
}

Status GpuDevice::ipcClose(void* base) {
  // Closing waits for the whole device (device.h, gate_waits.h).
  const auto quiet = pendingWaits_->quiet();
  if (!quiet.owns_lock()) {
    return {hclInProgress, "IPC close deferred: a stream of the device waits on a gate"};
  }
  HCL_TRY(bind());
  HCL_GPU_TRY(gpuIpcCloseMemHandle(base), GPU_FN("IpcCloseMemHandle"));
  return {};
}

std::unique_ptr<Stream> GpuDevice::createStream() {
  const int index = index_;
  return std::make_unique<CpuStream>(kKind, [index] { return check(gpuSetDevice(index), GPU_FN("SetDevice")); });
}

GpuDirectSupport GpuDevice::gpuDirect() const {
  GpuDirectSupport g;
  std::string why;
#ifdef HCL_GPU_HIP
  why = "dma-buf: the HIP runtime has no query for it, assumed unsupported";
  g.peermem = pathExists("/sys/kernel/mm/memory_peers/amdkfd");
  why += g.peermem ? "; peer memory: amdkfd is registered in /sys/kernel/mm/memory_peers"
                   : "; peer memory: /sys/kernel/mm/memory_peers/amdkfd not present";
#else
  int dmabuf = 0;
  if (gpuSetDevice(index_) == gpuSuccess &&
      cudaDeviceGetAttribute(&dmabuf, static_cast<cudaDeviceAttr>(124 /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */),
                             index_) == cudaSuccess) {
    g.dmabuf = dmabuf != 0;
    why = g.dmabuf ? "dma-buf: supported by the device and driver"
                   : "dma-buf: not supported by this device/driver (needs an open kernel module and Linux >= 5.12)";
  } else {
    (void)cudaGetLastError();
    why = "dma-buf: the driver does not answer CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED";
  }
  g.peermem = pathExists("/sys/module/nvidia_peermem");
  why += g.peermem ? "; nvidia_peermem: loaded" : "; nvidia_peermem: not loaded (/sys/module/nvidia_peermem absent)";
#endif
  g.detail = why;
  return g;
}

}  // namespace hcl::gpu
