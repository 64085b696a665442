#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include <fmt/format.h>

#include "device/cpu/cpu_copy_queue.h"
#include "device/cpu/cpu_stream.h"
#include "device/device.h"

namespace hcl {
namespace {

class CpuDevice final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string vendor() const override { return "cpu"; }
  int index() const override { return -1; }
  bool isDeviceMemory(const void*) const override { return false; }
  Status copy(void* dst, const void* src, size_t bytes) override {
    if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
    return {};
  }
  Status reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm, size_t count,
                const ReduceSpec& spec) override {
    hcl::reduce(dst, dstForm, a, aForm, b, bForm, count, spec);
    return {};
  }
  Status convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                 const ReduceSpec& spec) override {
    hcl::convert(dst, dstForm, src, srcForm, count, spec);
    return {};
  }
  // "Device" memory is host memory here; what the API hands out is tracked,
  // so that freeing anything else is an error instead of heap corruption.
  Status allocDevice(size_t bytes, void** ptr) override {
    HCL_TRY(allocPinned(bytes, ptr));
    std::lock_guard lock(mutex_);
    handedOut_.insert(*ptr);
    return {};
  }
  Status freeDevice(void* ptr) override {
    {
      std::lock_guard lock(mutex_);
      if (handedOut_.erase(ptr) == 0) {
        return invalidArgument(fmt::format("ptr {} was not allocated on the CPU device, or was freed already", ptr));
      }
    }
    return freePinned(ptr);
  }
  Status allocPinned(size_t bytes, void** ptr) override {
    *ptr = nullptr;
    if (bytes <= SIZE_MAX - 63) *ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!*ptr) return systemError(fmt::format("cannot allocate {} bytes of host memory", bytes));
    return {};
  }
  Status freePinned(void* ptr) override {
    std::free(ptr);
    return {};
  }
  Status createCopyQueue(std::unique_ptr<CopyQueue>& out) override {
    out = std::make_unique<CpuCopyQueue>();
    return {};
  }
  Status openGate(void*, std::unique_ptr<StreamGate>&) override {
    return invalidUsage("the CPU device has no native streams");
  }
  Status openPrivateGate(std::unique_ptr<StreamGate>&) override {
    return invalidUsage("the CPU device has no native streams");
  }
  std::unique_ptr<Stream> createStream() override { return std::make_unique<CpuStream>(); }

 private:
  std::mutex mutex_;
  std::unordered_set<const void*> handedOut_;
};

}  // namespace

Device& cpuDevice() {
  static CpuDevice device;
  return device;
}

}  // namespace hcl
