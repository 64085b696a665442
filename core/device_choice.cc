#include "core/device_choice.h"

#include <fmt/format.h>

#include <optional>

#include "core/log.h"
#include "core/params.h"

namespace hcl {
namespace {

thread_local std::optional<DeviceChoice> tlsChoice;

}  // namespace

void setThreadDeviceChoice(const DeviceChoice& choice) { tlsChoice = choice; }

DeviceChoice currentDeviceChoice() {
  if (tlsChoice) return *tlsChoice;
  DeviceChoice c;
  const std::string text = paramString("HCL_DEVICE");
  if (!parseDeviceChoice(text, c)) {
    log::warn(log::Init, "HCL_DEVICE={} is not auto, cpu, cuda[:N], hip[:N] or sim[:N]; using auto", text);
  }
  return c;
}

Status chooseDevice(CommSettings& settings, int index) {
  DeviceChoice c = currentDeviceChoice();
  if (index >= 0 && (c.automatic || c.kind != DeviceKind::Cpu)) c.index = index;
  std::string note;
  HCL_TRY(resolveDevice(c, &settings.device, &note).withContext(fmt::format("device {}", toString(c))));
  if (!note.empty()) log::info(log::Init, "device auto: no GPU runtime usable ({}); using the CPU", note);
  log::info(log::Init, "device {} {}", settings.device->vendor(), settings.device->index());
  return {};
}

}  // namespace hcl
