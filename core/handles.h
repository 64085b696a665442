// The objects behind the C handles, and the registry that tells a live handle
// from a destroyed or made-up one. The registry is process-wide because the
// API hands out raw pointers and must reject stale ones.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/communicator.h"
#include "device/device.h"

struct hclComm {
  std::shared_ptr<hcl::Communicator> impl;  // null until a deferred init completes
  // An init that has not finished: one deferred to hclGroupEnd, or a
  // nonblocking one (config.blocking = 0). Cleared, with release order, once
  // initStatus holds its result.
  std::atomic<bool> initPending{false};
  // Set when that init starts to run (at hclGroupEnd, or at once when
  // nonblocking). From then on hclCommAbort can stop it through initAbort if
  // it is cancellable: an init from a unique id is, a split or shrink (which
  // exchanges over its parent's links) is not.
  std::atomic<bool> initRunning{false};
  std::atomic<bool> initAbort{false};
  bool initCancellable = false;
  hcl::Status initStatus;
  mutable std::mutex lastErrorMutex;
  std::string lastError;
  uint64_t lastErrorSerial = 0;  // when it was recorded (core/errors.cc)
  // A nonblocking init's thread (joinable only for such an init). Declared
  // last so that it is joined before the members it writes are destroyed.
  std::jthread initThread;
};

struct hclStream {
  std::unique_ptr<hcl::Stream> impl;
  // Operations recorded on it in groups not yet ended (core/group.cc).
  std::atomic<int> inOpenGroups{0};
  // Held while a group queues its jobs on several streams (core/group.cc).
  std::mutex groupLaunch;
};

namespace hcl {

// Each handle is registered with its kind, so that a stream passed where a
// communicator is expected (or the reverse) is rejected like a made-up one.
void registerHandle(const hclComm* comm);
void registerHandle(const hclStream* stream);
// False when the handle was not registered: of two threads that unregister
// one handle at once, only one gets true and may free it.
bool unregisterHandle(const hclComm* comm);
bool unregisterHandle(const hclStream* stream);
// Unregisters `comm` when it is live and take() says so, in one step with
// the check: true when the caller now owns it and may free it.
bool unregisterHandleIf(const hclComm* comm, const std::function<bool()>& take);
bool isLiveHandle(const hclComm* comm);
bool isLiveHandle(const hclStream* stream);
// Runs fn() while `comm` is guaranteed to stay alive; false if it is not live.
bool withLiveHandle(const hclComm* comm, const std::function<void()>& fn);

}  // namespace hcl
