#include "device/plugin_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/params.h"

namespace hcl {
namespace {

std::string directoryOfThisCode() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&loadDevicePlugin), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

std::vector<std::string> candidates(const char* fileName) {
  std::vector<std::string> paths;
  const std::string configured = paramString("HCL_PLUGIN_DIR");
  if (!configured.empty()) paths.push_back(configured + "/" + fileName);
  const std::string here = directoryOfThisCode();
  if (!here.empty()) paths.push_back(here + "/" + fileName);
#ifdef HCL_BUILD_PLUGIN_DIR
  paths.push_back(std::string(HCL_BUILD_PLUGIN_DIR) + "/" + fileName);
#endif
  paths.emplace_back(fileName);
  return paths;
}

}  // namespace

Status loadDevicePlugin(const char* fileName, DeviceRuntime** out) {
  std::string tried;
  for (const std::string& path : candidates(fileName)) {
    if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) continue;
    // The handle is kept for the life of the process: the runtime it makes is.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += fmt::format("; {}: {}", path, dlerror());
      continue;
    }
    auto entry = reinterpret_cast<DevicePluginEntry>(dlsym(handle, kDevicePluginSymbol));
    if (!entry) {
      return systemError(fmt::format("{} has no {} entry point", path, kDevicePluginSymbol));
    }
    char error[512] = {};
    DeviceRuntime* rt = entry(kDevicePluginAbi, error, sizeof error);
    if (!rt) return systemError(fmt::format("{}: {}", path, error));
    *out = rt;
    return {};
  }
  return systemError(fmt::format("device plugin {} not found (this build may lack the toolkit){}", fileName, tried));
}

}  // namespace hcl
