#include "device/registry.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <mutex>

#include "device/plugin_loader.h"
#include "device/sim/sim_device.h"

namespace hcl {
namespace {

struct KindName {
  DeviceKind kind;
  std::string_view name;
};
constexpr KindName kKinds[] = {
    {DeviceKind::Cpu, "cpu"}, {DeviceKind::Cuda, "cuda"}, {DeviceKind::Hip, "hip"}, {DeviceKind::Sim, "sim"}};

// A plugin runtime, loaded once. The runtime object is never destroyed: it
// may hold driver state that must outlive every static destructor.
struct PluginSlot {
  std::once_flag once;
  DeviceRuntime* runtime = nullptr;
  Status failure;
};

PluginSlot& slotFor(DeviceKind kind) {
  static PluginSlot cuda, hip;
  return kind == DeviceKind::Cuda ? cuda : hip;
}

}  // namespace

bool parseDeviceChoice(std::string_view text, DeviceChoice& out) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  DeviceChoice c;
  if (text.empty() || text == "auto") {
    out = c;
    return true;
  }
  const size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  bool known = false;
  for (const KindName& k : kKinds) {
    if (k.name == name) {
      c.kind = k.kind;
      known = true;
    }
  }
  if (!known) return false;
  c.automatic = false;
  if (colon != std::string_view::npos) {
    const std::string_view digits = text.substr(colon + 1);
    int index = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || index < 0 || c.kind == DeviceKind::Cpu) {
      return false;
    }
    c.index = index;
  }
  out = c;
  return true;
}

std::string toString(const DeviceChoice& c) {
  if (c.automatic) return "auto";
  std::string s = hcl::toString(c.kind);
  if (c.index >= 0) s += fmt::format(":{}", c.index);
  return s;
}

Status deviceRuntime(DeviceKind kind, DeviceRuntime** out) {
  if (kind == DeviceKind::Sim) {
    *out = &sim::runtime();
    return {};
  }
  if (kind != DeviceKind::Cuda && kind != DeviceKind::Hip) {
    return invalidArgument(fmt::format("device kind {} has no runtime", hcl::toString(kind)));
  }
  PluginSlot& slot = slotFor(kind);
  std::call_once(slot.once, [&] {
    const char* file = kind == DeviceKind::Cuda ? "libhcl-cuda.so" : "libhcl-hip.so";
    slot.failure = loadDevicePlugin(file, &slot.runtime);
  });
  if (!slot.failure.ok()) return slot.failure;
  *out = slot.runtime;
  return {};
}

namespace {

Status openDevice(DeviceKind kind, int index, Device** out) {
  if (kind == DeviceKind::Cpu) {
    *out = &cpuDevice();
    return {};
  }
  DeviceRuntime* rt = nullptr;
  HCL_TRY(deviceRuntime(kind, &rt));
  int count = 0;
  HCL_TRY(rt->deviceCount(&count));
  if (index < 0) HCL_TRY(rt->currentDevice(&index));
  if (index >= count) {
    return invalidArgument(fmt::format("{} device {} does not exist ({} present)", hcl::toString(kind), index, count));
  }
  return rt->device(index, out);
}

}  // namespace

Status resolveDevice(const DeviceChoice& choice, Device** out, std::string* note) {
  if (!choice.automatic) return openDevice(choice.kind, choice.index, out);
  std::string why;
  for (DeviceKind kind : {DeviceKind::Cuda, DeviceKind::Hip}) {
    Status s = openDevice(kind, choice.index, out);
    if (s.ok()) return s;
    // A device index (hclCommInitAll's devlist) is meant for the first
    // runtime that has devices: a missing one is an error, not the CPU.
    DeviceRuntime* rt = nullptr;
    int count = 0;
    if (choice.index >= 0 && deviceRuntime(kind, &rt).ok() && rt->deviceCount(&count).ok() && count > 0) return s;
    why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", hcl::toString(kind), s.message());
  }
  if (note) *note = why;
  *out = &cpuDevice();
  return {};
}

}  // namespace hcl
