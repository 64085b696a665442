#include <cstdlib>
#include <cstring>

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
  Status allocDevice(size_t bytes, void** ptr) override { return allocPinned(bytes, ptr); }
  Status freeDevice(void* ptr) override { return freePinned(ptr); }
  Status allocPinned(size_t bytes, void** ptr) override {
    *ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
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
};

}  // namespace

Device& cpuDevice() {
  static CpuDevice device;
  return device;
}

}  // namespace hcl
