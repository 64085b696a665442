#include "transports/ofi/fabric_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace hcl::ofi {
namespace {

struct Loaded {
  FabricApi api;
  std::string failure;  // empty when api is usable
};

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& out, std::string& failure) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!out && failure.empty()) failure = fmt::format("libfabric.so.1 lacks {}", name);
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  // Kept open for the process's lifetime: providers may hold threads and
  // handlers that outlive any one communicator.
  void* handle = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    l.failure = fmt::format("cannot open libfabric.so.1 ({})", e ? e : "not found");
    return l;
  }
  resolve(handle, "fi_getinfo", l.api.getinfo, l.failure);
  resolve(handle, "fi_freeinfo", l.api.freeinfo, l.failure);
  resolve(handle, "fi_dupinfo", l.api.dupinfo, l.failure);
  resolve(handle, "fi_fabric", l.api.fabric, l.failure);
  resolve(handle, "fi_strerror", l.api.strerror, l.failure);
  return l;
}

}  // namespace

std::string FabricApi::errorText(int code) const {
  const int positive = code < 0 ? -code : code;
  return fmt::format("{} ({})", strerror ? strerror(positive) : "libfabric error", code);
}

const FabricApi* fabricApi(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.failure.empty()) {
    if (why) *why = loaded.failure;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace hcl::ofi
