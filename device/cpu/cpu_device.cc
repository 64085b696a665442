#include <cstring>

#include "device/cpu/cpu_stream.h"
#include "device/device.h"

namespace hcl {
namespace {

class CpuDevice final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string vendor() const override { return "cpu"; }
  int index() const override { return -1; }
  bool addresses(const void*) const override { return true; }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
  }
  void reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
              size_t count, const ReduceSpec& spec) override {
    hcl::reduce(dst, dstForm, a, aForm, b, bForm, count, spec);
  }
  void convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
               const ReduceSpec& spec) override {
    hcl::convert(dst, dstForm, src, srcForm, count, spec);
  }
  std::unique_ptr<Stream> createStream() override { return std::make_unique<CpuStream>(); }
};

}  // namespace

Device& cpuDevice() {
  static CpuDevice device;
  return device;
}

}  // namespace hcl
