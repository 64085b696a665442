// The in-process mailbox of one rank, found by its peers through a
// process-wide registry keyed by (secret, communicator tag, rank).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace hcl {

struct LocalInbox {
  std::mutex mutex;
  std::deque<Transfer*> sends;  // sends posted to the owner by one peer, in order
};

struct LocalEndpoint {
  explicit LocalEndpoint(int nranks) : inboxes(static_cast<size_t>(nranks)) {
    for (auto& box : inboxes) box = std::make_unique<LocalInbox>();
  }
  std::vector<std::unique_ptr<LocalInbox>> inboxes;  // indexed by sender rank
  std::atomic<bool> aborted{false};
};

using LocalEndpointKey = std::string;
LocalEndpointKey localEndpointKey(const TransportContext& ctx, int rank);

void registerLocalEndpoint(const LocalEndpointKey& key, std::shared_ptr<LocalEndpoint> ep);
std::shared_ptr<LocalEndpoint> findLocalEndpoint(const LocalEndpointKey& key);
void unregisterLocalEndpoint(const LocalEndpointKey& key);

}  // namespace hcl
