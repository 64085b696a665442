#include "transports/net_plugin/net_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <mutex>
#include <type_traits>

#include "core/log.h"
#include "transports/net_plugin/net_plugin_abi.h"

namespace hcl::netplugin {
namespace {

const char* resultName(netabi::Result r) {
  switch (r) {
    case 1: return "unhandled CUDA error";
    case 2: return "system error";
    case 3: return "internal error";
    case 4: return "invalid argument";
    case 5: return "invalid usage";
    case 6: return "remote error";
    case 7: return "in progress";
  }
  return "error";
}

// Plugins report through NCCL's logger; their lines join HCL's log under NET.
void forwardLog(int level, unsigned long /*flags*/, const char* file, int line, const char* format, ...) {
  if (!format) return;
  // NCCL's levels: 1 version, 2 warn, 3 info, 4 abort, 5 trace.
  const log::Level mapped = level == 2 || level == 4 ? log::Level::Warn
                            : level == 5             ? log::Level::Trace
                                                     : log::Level::Info;
  if (!log::enabled(mapped, log::Net)) return;
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  log::write(mapped, log::Net, fmt::format("net plugin: {} ({}:{})", text, file ? file : "?", line));
}

netabi::Result ignoreProfilerEvent(void** eventHandle, int, void*, int64_t, void*) {
  if (eventHandle) *eventHandle = nullptr;
  return netabi::kSuccess;
}

template <typename Table>
constexpr int tableVersion() {
  if constexpr (std::is_same_v<Table, netabi::Net_v8>) return 8;
  if constexpr (std::is_same_v<Table, netabi::Net_v9>) return 9;
  if constexpr (std::is_same_v<Table, netabi::Net_v10>) return 10;
  return 11;
}

// One adapter for every version: the tables differ in a few signatures.
template <typename Table>
class VersionedPlugin final : public NetPlugin {
  static constexpr int kVersion = tableVersion<Table>();

 public:
  VersionedPlugin(const Table* table, std::string library)
      : table_(table), name_(table->name ? table->name : "unnamed"), library_(std::move(library)) {}

  const std::string& name() const override { return name_; }
  int version() const override { return kVersion; }
  const std::string& library() const override { return library_; }

  // A v11 plugin's context is made once, for the process: HCL opens each
  // plugin once and keeps it, and passes no communicator to it.
  Status init() {
    if constexpr (kVersion >= 11) {
      netabi::CommConfig_v10 config{-1};
      return check("init", table_->init(&context_, 0, &config, forwardLog, ignoreProfilerEvent));
    } else if constexpr (kVersion >= 10) {
      return check("init", table_->init(forwardLog, ignoreProfilerEvent));
    } else {
      return check("init", table_->init(forwardLog));
    }
  }

  Status devices(int* count) override { return check("devices", table_->devices(count)); }

  Status properties(int device, DeviceProperties& out) override {
    using Properties = std::conditional_t<kVersion == 8, netabi::Properties_v8,
                                          std::conditional_t<kVersion == 11, netabi::Properties_v11, netabi::Properties_v9>>;
    Properties p{};
    HCL_TRY(check("getProperties", table_->getProperties(device, &p)));
    out.name = p.name ? p.name : fmt::format("device {}", device);
    out.ptrSupport = p.ptrSupport;
    out.speedMbps = p.speed;
    out.maxComms = p.maxComms;
    out.maxMessageBytes = INT_MAX;  // v8 sizes are ints
    if constexpr (kVersion >= 9) {
      if (p.maxP2pBytes > 0) out.maxMessageBytes = p.maxP2pBytes;
    }
    return {};
  }

  Status listen(int device, void* handle, void** listenComm) override {
    if constexpr (kVersion >= 11) {
      return check("listen", table_->listen(context_, device, handle, listenComm));
    } else {
      return check("listen", table_->listen(device, handle, listenComm));
    }
  }

  Status connect(int device, void* handle, void** sendComm) override {
    netabi::DeviceHandle* noOffload = nullptr;
    if constexpr (kVersion >= 11) {
      return check("connect", table_->connect(context_, device, handle, sendComm, &noOffload));
    } else if constexpr (kVersion >= 10) {
      netabi::CommConfig_v10 config{-1};
      return check("connect", table_->connect(device, &config, handle, sendComm, &noOffload));
    } else {
      return check("connect", table_->connect(device, handle, sendComm, &noOffload));
    }
  }

  Status accept(void* listenComm, void** recvComm) override {
    netabi::DeviceHandle* noOffload = nullptr;
    return check("accept", table_->accept(listenComm, recvComm, &noOffload));
  }

  Status registerHost(void* comm, void* data, size_t bytes, void** mhandle) override {
    return check("regMr", table_->regMr(comm, data, bytes, netabi::kPtrHost, mhandle));
  }

  Status deregister(void* comm, void* mhandle) override { return check("deregMr", table_->deregMr(comm, mhandle)); }

  Status isend(void* sendComm, void* data, size_t bytes, int tag, void* mhandle, void** request) override {
    if constexpr (kVersion == 8) {
      return check("isend", table_->isend(sendComm, data, static_cast<int>(bytes), tag, mhandle, request));
    } else if constexpr (kVersion == 9) {
      return check("isend", table_->isend(sendComm, data, bytes, tag, mhandle, request));
    } else {
      return check("isend", table_->isend(sendComm, data, bytes, tag, mhandle, nullptr, request));
    }
  }

  Status irecv(void* recvComm, void* data, size_t bytes, int tag, void* mhandle, void** request) override {
    void* buffers[1] = {data};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    if constexpr (kVersion == 8) {
      int sizes[1] = {static_cast<int>(bytes)};
      return check("irecv", table_->irecv(recvComm, 1, buffers, sizes, tags, mhandles, request));
    } else if constexpr (kVersion == 9) {
      size_t sizes[1] = {bytes};
      return check("irecv", table_->irecv(recvComm, 1, buffers, sizes, tags, mhandles, request));
    } else {
      size_t sizes[1] = {bytes};
      void* phandles[1] = {nullptr};
      return check("irecv", table_->irecv(recvComm, 1, buffers, sizes, tags, mhandles, phandles, request));
    }
  }

  Status test(void* request, bool* done, size_t* bytes) override {
    int finished = 0;
    int size = 0;
    HCL_TRY(check("test", table_->test(request, &finished, &size)));
    *done = finished != 0;
    if (bytes) *bytes = size < 0 ? 0 : static_cast<size_t>(size);
    return {};
  }

  Status closeSend(void* comm) override { return check("closeSend", table_->closeSend(comm)); }
  Status closeRecv(void* comm) override { return check("closeRecv", table_->closeRecv(comm)); }
  Status closeListen(void* comm) override { return check("closeListen", table_->closeListen(comm)); }

 private:
  Status check(const char* call, netabi::Result r) const {
    if (r == netabi::kSuccess) return {};
    std::string text = fmt::format("net plugin '{}' ({}): {} failed: {} ({})", name_, library_, call, resultName(r), r);
    return r == 6 ? remoteError(std::move(text)) : systemError(std::move(text));
  }

  const Table* table_;
  void* context_ = nullptr;  // v11's
  std::string name_;
  std::string library_;
};

template <typename Table>
std::unique_ptr<NetPlugin> adopt(void* library, const char* symbol, const std::string& path, std::string& failure) {
  const auto* table = static_cast<const Table*>(dlsym(library, symbol));
  if (!table) return nullptr;
  auto plugin = std::make_unique<VersionedPlugin<Table>>(table, path);
  if (Status s = plugin->init(); !s.ok()) {
    failure = s.message();
    return nullptr;
  }
  return plugin;
}

struct Opened {
  NetPlugin* plugin = nullptr;
  std::string failure;
};

// Every plugin this process opened, by library handle and by the spec that
// named it. Never destroyed: plugins are never unloaded (NCCL's rule too),
// and a connection closed during static destruction still calls into one.
struct Plugins {
  std::mutex mutex;
  std::map<void*, std::unique_ptr<NetPlugin>> byLibrary;
  std::map<std::string, Opened> bySpec;
};

Plugins& plugins() {
  static Plugins& all = *std::make_unique<Plugins>().release();
  return all;
}

Opened open(Plugins& all, const std::string& spec) {
  Opened o;
  std::vector<std::string> tried;
  for (const std::string& path : libraryCandidates(spec)) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* e = dlerror();
      tried.push_back(e ? std::string(e) : path + ": not found");  // dlerror names the file
      continue;
    }
    // Two names for one library (a name and its path) share one plugin, initialised once.
    if (auto known = all.byLibrary.find(library); known != all.byLibrary.end()) {
      o.plugin = known->second.get();
      return o;
    }
    std::string failure;
    std::unique_ptr<NetPlugin> plugin = adopt<netabi::Net_v11>(library, "ncclNetPlugin_v11", path, failure);
    if (!plugin && failure.empty()) plugin = adopt<netabi::Net_v10>(library, "ncclNetPlugin_v10", path, failure);
    if (!plugin && failure.empty()) plugin = adopt<netabi::Net_v9>(library, "ncclNetPlugin_v9", path, failure);
    if (!plugin && failure.empty()) plugin = adopt<netabi::Net_v8>(library, "ncclNetPlugin_v8", path, failure);
    if (plugin) {
      o.plugin = plugin.get();
      all.byLibrary.emplace(library, std::move(plugin));
      return o;
    }
    // Kept open: a plugin that failed its init may have started threads.
    tried.push_back(failure.empty() ? fmt::format("{}: exports no ncclNetPlugin_v11, _v10, _v9 or _v8", path) : failure);
  }
  o.failure = fmt::format("no NCCL net plugin could be used ({})", fmt::join(tried, "; "));
  return o;
}

}  // namespace

std::vector<std::string> libraryCandidates(const std::string& spec) {
  if (spec.empty()) return {"libnccl-net.so"};
  if (spec.find('/') != std::string::npos) return {spec};
  return {"libnccl-net-" + spec + ".so", spec};
}

NetPlugin* loadNetPlugin(const std::string& spec, std::string* why) {
  Plugins& all = plugins();
  std::lock_guard lock(all.mutex);
  auto it = all.bySpec.find(spec);
  if (it == all.bySpec.end()) it = all.bySpec.emplace(spec, open(all, spec)).first;
  if (!it->second.plugin && why) *why = it->second.failure;
  return it->second.plugin;
}

}  // namespace hcl::netplugin
