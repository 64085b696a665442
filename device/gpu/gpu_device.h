// A CUDA or HIP device: memory, synchronous copy/reduce/convert on an
// internal non-blocking stream, copy queues and stream gates.
#pragma once

#include "device/device.h"
#include "device/gpu/gpu_api.h"
#include "device/gpu/gpu_stream_gate.h"

namespace hcl::gpu {

// The base of the allocation that holds a pointer (cuMemGetAddressRange,
// hipMemGetAddressRange).
using AddressRangeFn = Status (*)(const void* ptr, void** base, size_t* bytes);

class GpuDevice final : public Device {
 public:
  static Status create(int index, std::unique_ptr<GpuDevice>& out);
  ~GpuDevice() override;

  DeviceKind kind() const override { return kKind; }
  std::string vendor() const override { return kVendor; }
  int index() const override { return index_; }
  bool isDeviceMemory(const void* ptr) const override;

  Status copy(void* dst, const void* src, size_t bytes) override;
  Status reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm, size_t count,
                const ReduceSpec& spec) override;
  Status convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                 const ReduceSpec& spec) override;

  Status allocDevice(size_t bytes, void** ptr) override;
  Status freeDevice(void* ptr) override;
  Status allocPinned(size_t bytes, void** ptr) override;
  Status freePinned(void* ptr) override;

  Status createCopyQueue(std::unique_ptr<CopyQueue>& out) override;
  Status openGate(void* nativeStream, std::unique_ptr<StreamGate>& out) override;
  Status openPrivateGate(std::unique_ptr<StreamGate>& out) override;
  std::unique_ptr<Stream> createStream() override;

  bool ipcSupported(std::string* whyNot) const override;
  Status ipcExport(const void* ptr, DeviceIpcHandle* handle, uint64_t* offset) override;
  Status ipcOpen(const DeviceIpcHandle& handle, void** base) override;
  Status ipcClose(void* base) override;

  GpuDirectSupport gpuDirect() const override;

 private:
  explicit GpuDevice(int index) : index_(index) {}
  Status bind() const;          // makes this device current on the calling thread
  Status finish(const char* what);  // waits for the internal stream

  const int index_;
  gpuStream_t stream_ = nullptr;  // internal, non-blocking
  GateWaitMethod gateWait_;
  std::shared_ptr<PendingWaits> pendingWaits_ = std::make_shared<PendingWaits>();
  AddressRangeFn addressRange_ = nullptr;
  std::string addressRangeWhy_;
};

}  // namespace hcl::gpu
