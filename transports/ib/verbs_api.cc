#include "transports/ib/verbs_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>

namespace hcl::ib {
namespace {

struct Loaded {
  std::unique_ptr<VerbsApi> api;
  std::string failure;
};

template <typename Fn>
bool bind(void* library, const char* symbol, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (!out) missing += missing.empty() ? symbol : fmt::format(", {}", symbol);
  return out != nullptr;
}

Loaded open(const std::string& path) {
  Loaded l;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* e = dlerror();
    l.failure = e ? e : path + ": cannot be opened";
    return l;
  }
  auto api = std::make_unique<VerbsApi>();
  api->library = path;
  std::string missing;
  bind(library, "ibv_get_device_list", api->getDeviceList, missing);
  bind(library, "ibv_free_device_list", api->freeDeviceList, missing);
  bind(library, "ibv_get_device_name", api->getDeviceName, missing);
  bind(library, "ibv_open_device", api->openDevice, missing);
  bind(library, "ibv_close_device", api->closeDevice, missing);
  bind(library, "ibv_query_device", api->queryDevice, missing);
  bind(library, "ibv_query_port", api->queryPort, missing);
  bind(library, "ibv_query_gid", api->queryGid, missing);
  bind(library, "ibv_alloc_pd", api->allocPd, missing);
  bind(library, "ibv_dealloc_pd", api->deallocPd, missing);
  bind(library, "ibv_reg_mr", api->regMr, missing);
  bind(library, "ibv_dereg_mr", api->deregMr, missing);
  bind(library, "ibv_create_cq", api->createCq, missing);
  bind(library, "ibv_destroy_cq", api->destroyCq, missing);
  bind(library, "ibv_create_qp", api->createQp, missing);
  bind(library, "ibv_modify_qp", api->modifyQp, missing);
  bind(library, "ibv_destroy_qp", api->destroyQp, missing);
  bind(library, "ibv_wc_status_str", api->wcStatusText, missing);
  api->queryGidEx = reinterpret_cast<decltype(api->queryGidEx)>(dlsym(library, "_ibv_query_gid_ex"));
  if (!missing.empty()) {
    // Kept open: a library that loaded may have started threads.
    l.failure = fmt::format("{} lacks {}", path, missing);
    return l;
  }
  l.api = std::move(api);
  return l;
}

}  // namespace

const VerbsApi* loadVerbs(const std::string& library, std::string* why) {
  static std::mutex mutex;
  // Never destroyed: verbs objects outlive static destruction in other code.
  static auto& loaded = *std::make_unique<std::map<std::string, Loaded>>().release();
  std::lock_guard lock(mutex);
  auto it = loaded.find(library);
  if (it == loaded.end()) it = loaded.emplace(library, open(library)).first;
  if (!it->second.api && why) *why = it->second.failure;
  return it->second.api.get();
}

}  // namespace hcl::ib
