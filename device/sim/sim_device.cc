#include "device/sim/sim_device.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "device/cpu/cpu_stream.h"
#include "device/sim/sim_internal.h"

namespace hcl::sim {
namespace {

constexpr int kSimDevices = 2;
constexpr unsigned char kFreedByte = 0xDD;

class SimDevice final : public Device {
 public:
  SimDevice(int index, MemoryMap& memory) : index_(index), memory_(memory) {}

  DeviceKind kind() const override { return DeviceKind::Sim; }
  std::string vendor() const override { return "sim"; }
  int index() const override { return index_; }
  bool isDeviceMemory(const void* ptr) const override { return memory_.contains(ptr); }

  Status copy(void* dst, const void* src, size_t bytes) override {
    // A synchronous copy from a host thread needs the hardware queue: on a
    // GPU whose streams share one, it would wait for the stopped stream,
    // which may be waiting for this very thread. An error, not a hang.
    const bool touchesDevice = memory_.contains(dst) || memory_.contains(src);
    if (touchesDevice && !onNativeStream() && hardware_.stopped()) {
      return {hclInternalError,
              "sim device: a synchronous device copy while a native stream waits on the shared hardware queue"};
    }
    transfer(dst, memory_.contains(dst), src, memory_.contains(src), bytes);
    return {};
  }
  Status reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm, size_t count,
                const ReduceSpec& spec) override {
    auto ha = toHost(a, count * formElementSize(spec.type, aForm));
    auto hb = toHost(b, count * formElementSize(spec.type, bForm));
    std::vector<std::byte> out(count * formElementSize(spec.type, dstForm));
    hcl::reduce(out.data(), dstForm, ha.data(), aForm, hb.data(), bForm, count, spec);
    return copy(dst, out.data(), out.size());
  }
  Status convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                 const ReduceSpec& spec) override {
    auto hs = toHost(src, count * formElementSize(spec.type, srcForm));
    std::vector<std::byte> out(count * formElementSize(spec.type, dstForm));
    hcl::convert(out.data(), dstForm, hs.data(), srcForm, count, spec);
    return copy(dst, out.data(), out.size());
  }

  Status allocDevice(size_t bytes, void** ptr) override {
    *ptr = memory_.allocate(bytes);
    if (!*ptr) return systemError(fmt::format("sim device: cannot allocate {} bytes", bytes));
    return {};
  }
  Status freeDevice(void* ptr) override {
    if (ptr && !memory_.release(ptr)) {
      return invalidArgument(fmt::format("{} is not sim device memory", ptr));
    }
    return {};
  }
  Status allocPinned(size_t bytes, void** ptr) override {
    HCL_TRY(cpuDevice().allocPinned(bytes, ptr));
    std::lock_guard lock(pinnedMutex_);
    pinned_[*ptr] = bytes;
    return {};
  }
  // Overwrites the block first: a command still queued on a native stream
  // that reads it then moves garbage, which the caller's checks catch. (A
  // GPU runtime's free of pinned memory waits for the device instead.)
  Status freePinned(void* ptr) override {
    if (!ptr) return {};
    size_t bytes = 0;
    {
      std::lock_guard lock(pinnedMutex_);
      auto it = pinned_.find(ptr);
      if (it == pinned_.end()) return invalidArgument(fmt::format("{} is not sim pinned memory", ptr));
      bytes = it->second;
      pinned_.erase(it);
    }
    std::memset(ptr, kFreedByte, bytes);
    return cpuDevice().freePinned(ptr);
  }

  Status createCopyQueue(std::unique_ptr<CopyQueue>& out) override {
    out = makeCopyQueue(memory_, hardware_);
    return {};
  }
  Status openGate(void* nativeStream, std::unique_ptr<StreamGate>& out) override {
    NativeStream* s = nativeStream ? static_cast<NativeStream*>(nativeStream) : &defaultStream();
    out = makeGate(*s, memory_, hardware_);
    return {};
  }
  Status openPrivateGate(std::unique_ptr<StreamGate>& out) override {
    out = makeOwningGate(std::make_unique<NativeStream>(), memory_, hardware_);
    return {};
  }
  std::unique_ptr<Stream> createStream() override { return std::make_unique<CpuStream>(); }

  bool ipcSupported(std::string* whyNot) const override { return canOpenPeerHandles(whyNot); }
  Status ipcExport(const void* ptr, DeviceIpcHandle* handle, uint64_t* offset) override {
    return memory_.exportHandle(ptr, handle, offset);
  }
  Status ipcOpen(const DeviceIpcHandle& handle, void** base) override { return memory_.openHandle(handle, base); }
  Status ipcClose(void* base) override {
    if (!hardware_.pendingWaits->quiet().owns_lock()) {
      return {hclInProgress, "IPC close deferred: a stream of the sim device waits on a gate"};
    }
    return memory_.closeHandle(base);
  }
  GpuDirectSupport gpuDirect() const override { return {false, false, "the sim device has no NIC access"}; }

 private:
  std::vector<std::byte> toHost(const void* p, size_t bytes) {
    std::vector<std::byte> h(bytes);
    transfer(h.data(), false, p, memory_.contains(p), bytes);
    return h;
  }
  NativeStream& defaultStream() {
    std::call_once(defaultOnce_, [this] { default_ = std::make_unique<NativeStream>(); });
    return *default_;
  }

  int index_;
  MemoryMap& memory_;
  HardwareQueue hardware_;
  std::once_flag defaultOnce_;
  std::unique_ptr<NativeStream> default_;
  std::mutex pinnedMutex_;
  std::map<void*, size_t> pinned_;
};

class SimRuntime final : public DeviceRuntime {
 public:
  DeviceKind kind() const override { return DeviceKind::Sim; }
  Status deviceCount(int* count) override {
    *count = kSimDevices;
    return {};
  }
  Status currentDevice(int* index) override {
    *index = 0;
    return {};
  }
  Status device(int index, Device** out) override {
    if (index < 0 || index >= kSimDevices) {
      return invalidArgument(fmt::format("sim device {} does not exist (the sim runtime has {})", index, kSimDevices));
    }
    std::lock_guard lock(mutex_);
    auto& d = devices_[static_cast<size_t>(index)];
    if (!d) d = std::make_unique<SimDevice>(index, memory_[static_cast<size_t>(index)]);
    *out = d.get();
    return {};
  }
  int owner(const void* ptr) override {
    for (int i = 0; i < kSimDevices; ++i) {
      if (memory_[static_cast<size_t>(i)].contains(ptr)) return i;
    }
    return -1;
  }

 private:
  std::mutex mutex_;
  MemoryMap memory_[kSimDevices];
  std::unique_ptr<SimDevice> devices_[kSimDevices];
};

}  // namespace

DeviceRuntime& runtime() {
  static SimRuntime instance;
  return instance;
}

}  // namespace hcl::sim
