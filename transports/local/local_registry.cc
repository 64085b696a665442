#include <map>

#include "transports/local/local_endpoint.h"

namespace hcl {
namespace {

// The only process-wide state of this transport: in-process ranks must find
// each other, and nothing else in the API tells them where to look.
struct Registry {
  std::mutex mutex;
  std::map<LocalEndpointKey, std::shared_ptr<LocalEndpoint>> endpoints;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

LocalEndpointKey localEndpointKey(const TransportContext& ctx, int rank) {
  std::string key(reinterpret_cast<const char*>(ctx.secret), sizeof ctx.secret);
  key += ":" + std::to_string(ctx.commTag) + ":" + std::to_string(rank);
  return key;
}

void registerLocalEndpoint(const LocalEndpointKey& key, std::shared_ptr<LocalEndpoint> ep) {
  std::lock_guard lock(registry().mutex);
  registry().endpoints[key] = std::move(ep);
}

std::shared_ptr<LocalEndpoint> findLocalEndpoint(const LocalEndpointKey& key) {
  std::lock_guard lock(registry().mutex);
  auto it = registry().endpoints.find(key);
  return it == registry().endpoints.end() ? nullptr : it->second;
}

void unregisterLocalEndpoint(const LocalEndpointKey& key) {
  std::lock_guard lock(registry().mutex);
  registry().endpoints.erase(key);
}

}  // namespace hcl
