// The objects behind the C handles, and the registry that tells a live handle
// from a destroyed or made-up one. The registry is process-wide because the
// API hands out raw pointers and must reject stale ones.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/communicator.h"
#include "device/device.h"

struct hclComm {
  std::shared_ptr<hcl::Communicator> impl;  // null until a deferred init completes
  hcl::Status initStatus;
  mutable std::mutex lastErrorMutex;
  std::string lastError;
};

struct hclStream {
  std::unique_ptr<hcl::Stream> impl;
};

namespace hcl {

void registerHandle(const void* handle);
void unregisterHandle(const void* handle);
bool isLiveHandle(const void* handle);
// Runs fn() while `handle` is guaranteed to stay alive; false if it is not live.
bool withLiveHandle(const void* handle, const std::function<void()>& fn);

}  // namespace hcl
