// C entry points: versions, unique ids, communicator creation and teardown.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core/comm_init.h"
#include "core/deadline.h"
#include "core/device_choice.h"
#include "core/errors.h"
#include "core/group.h"
#include "core/log.h"
#include "core/no_throw.h"
#include "core/params.h"
#include "core/split.h"
#include "core/validate.h"

using namespace hcl;

namespace {

std::once_flag versionLogged;

void logVersionOnce() {
  std::call_once(versionLogged, [] {
    log::info(log::Init, "{}", log::versionText());
  });
}

Status checkConfig(const hclConfig_t* config) {
  if (!config) return {};
  if (config->magic != HCL_CONFIG_MAGIC) {
    return invalidArgument(fmt::format("config->magic {:#x} is not {:#x}: initialize the config with HCL_CONFIG_INITIALIZER",
                                       config->magic, HCL_CONFIG_MAGIC));
  }
  if (config->size < offsetof(hclConfig_t, blocking) + sizeof(int)) {
    return invalidArgument(fmt::format("config->size {} is too small", config->size));
  }
  // Fields the caller's struct (perhaps of an older NCCL version) has and set.
  auto given = [&](size_t offset, int value) {
    return config->size >= offset + sizeof(int) && value != HCL_CONFIG_UNDEF_INT;
  };
  auto flag = [&](const char* name, size_t offset, int value) -> Status {
    if (!given(offset, value) || value == 0 || value == 1) return {};
    return invalidArgument(fmt::format("config->{} {} must be 0 or 1", name, value));
  };
  HCL_TRY(flag("blocking", offsetof(hclConfig_t, blocking), config->blocking));
  HCL_TRY(flag("splitShare", offsetof(hclConfig_t, splitShare), config->splitShare));
  HCL_TRY(flag("collnetEnable", offsetof(hclConfig_t, collnetEnable), config->collnetEnable));
  HCL_TRY(flag("shrinkShare", offsetof(hclConfig_t, shrinkShare), config->shrinkShare));
  HCL_TRY(flag("nvlinkCentricSched", offsetof(hclConfig_t, nvlinkCentricSched), config->nvlinkCentricSched));
  constexpr int kKnownCtaPolicies = HCL_CTA_POLICY_EFFICIENCY | HCL_CTA_POLICY_ZERO;
  if (given(offsetof(hclConfig_t, CTAPolicy), config->CTAPolicy) &&
      (config->CTAPolicy < 0 || (config->CTAPolicy & ~kKnownCtaPolicies) != 0)) {
    return invalidArgument(fmt::format(
        "config->CTAPolicy {} is not HCL_CTA_POLICY_DEFAULT or a combination of HCL_CTA_POLICY_EFFICIENCY and "
        "HCL_CTA_POLICY_ZERO", config->CTAPolicy));
  }
  const auto positive = [&](const char* name, size_t offset, int value) -> Status {
    if (!given(offset, value) || value > 0) return {};
    return invalidArgument(fmt::format("config->{} {} is not positive", name, value));
  };
  HCL_TRY(positive("nvlsCTAs", offsetof(hclConfig_t, nvlsCTAs), config->nvlsCTAs));
  HCL_TRY(positive("nChannelsPerNetPeer", offsetof(hclConfig_t, nChannelsPerNetPeer), config->nChannelsPerNetPeer));
  // NCCL's bound: its channel count (MAXCHANNELS).
  constexpr int kMaxChannelsPerNetPeer = 64;
  if (given(offsetof(hclConfig_t, nChannelsPerNetPeer), config->nChannelsPerNetPeer) &&
      config->nChannelsPerNetPeer > kMaxChannelsPerNetPeer) {
    return invalidArgument(fmt::format("config->nChannelsPerNetPeer {} is above {}", config->nChannelsPerNetPeer,
                                       kMaxChannelsPerNetPeer));
  }
  if (given(offsetof(hclConfig_t, cgaClusterSize), config->cgaClusterSize) && config->cgaClusterSize < 0) {
    return invalidArgument(fmt::format("config->cgaClusterSize {} is negative", config->cgaClusterSize));
  }
  HCL_TRY(positive("minCTAs", offsetof(hclConfig_t, minCTAs), config->minCTAs));
  HCL_TRY(positive("maxCTAs", offsetof(hclConfig_t, maxCTAs), config->maxCTAs));
  const bool minSet = given(offsetof(hclConfig_t, minCTAs), config->minCTAs);
  const bool maxSet = given(offsetof(hclConfig_t, maxCTAs), config->maxCTAs);
  if (minSet && maxSet && config->minCTAs > config->maxCTAs) {
    return invalidArgument(
        fmt::format("config->minCTAs {} is above config->maxCTAs {}", config->minCTAs, config->maxCTAs));
  }
  return {};
}

// An init not yet finished still refers to the handle. One deferred to the
// end of a group that is still open has not started; a running one (at
// hclGroupEnd, or nonblocking) can only be stopped with hclCommAbort.
Status checkNotPending(const char* call, hclComm_t comm) {
  if (!comm->initPending.load(std::memory_order_acquire)) return {};
  if (!comm->initRunning.load(std::memory_order_acquire)) {
    return invalidUsage(fmt::format("{}: comm {} is still being created in an open group (call hclGroupEnd first)",
                                    call, static_cast<const void*>(comm)));
  }
  return invalidArgument(fmt::format("{}: comm {} is still initializing: wait until hclCommGetAsyncError no longer "
                                     "gives hclInProgress, or stop the init with hclCommAbort",
                                     call, static_cast<const void*>(comm)));
}

// Stops the running init of `comm` and waits until it has given up. A
// nonblocking init's own thread is instead joined when the handle is freed:
// true when that is left to do (the init may still write the handle).
bool stopRunningInit(hclComm_t comm) {
  bool pending = false, ownThread = false;
  withLiveHandle(comm, [&] {
    pending = comm->initPending.load(std::memory_order_acquire);
    ownThread = comm->initThread.joinable();
    if (pending) comm->initAbort.store(true, std::memory_order_release);
  });
  if (!pending) return false;
  if (ownThread) return true;
  Backoff backoff(0);
  while (pending && withLiveHandle(comm, [&] { pending = comm->initPending.load(std::memory_order_acquire); })) {
    backoff.pause();
  }
  return false;
}

// An init that runs from now on: abort can stop it, destroy is refused.
void markInitRunning(hclComm* handle) {
  handle->initRunning.store(true);
  handle->initPending.store(true);
}

// An init's result on its handle; afterwards the init no longer touches it.
void settleInit(hclComm* handle, const Status& result) {
  handle->initStatus = result;
  handle->initPending.store(false, std::memory_order_release);
}

// Runs fill() at hclGroupEnd, beside the group's other inits; `handle`
// (null: none to fill) is pending until then and keeps fill's result.
// `parent`: the communicator a split or shrink exchanges over.
void deferCreation(hclComm* handle, std::function<Status()> fill, const Communicator* parent = nullptr) {
  if (handle) handle->initPending.store(true);
  auto settle = [handle](const Status& result) {
    if (handle) settleInit(handle, result);
  };
  deferInit({[handle, settle, fill = std::move(fill)]() -> Status {
               if (handle) handle->initRunning.store(true, std::memory_order_release);
               Status r = fill();
               settle(r);
               return r;
             },
             settle, parent,
             [handle] {
               // The handle may be gone: its init done and then destroyed.
               withLiveHandle(handle, [handle] {
                 if (handle->initPending.load(std::memory_order_acquire)) {
                   handle->initAbort.store(true, std::memory_order_release);
                 }
               });
             }});
}

// A nonblocking init (config.blocking = 0): fill() runs on the handle's own
// thread, and hclCommGetAsyncError says hclInProgress until it is done.
Status startInBackground(hclComm* handle, std::function<Status()> fill) {
  markInitRunning(handle);
  return noThrow("starting a nonblocking init", [&]() -> Status {
    handle->initThread = std::jthread([handle, fill = std::move(fill)] {
      const Status r = fill();
      if (!r.ok()) report(r, handle);
      settleInit(handle, r);
    });
    return {};
  });
}

hclComm* newHandle() {
  auto handle = std::make_unique<hclComm>();
  registerHandle(handle.get());
  return handle.release();  // owned by the registry until hclCommDestroy/Abort
}

void deleteHandle(hclComm* handle) {
  if (!unregisterHandle(handle)) return;  // another thread's destroy or abort took it
  std::unique_ptr<hclComm> owned(handle);
  // The owner's operation in flight, if any (an abort from another thread
  // stops it), holds no reference of its own: it ends before this one goes.
  // A communicator still being made ran none, and its init thread may be
  // writing impl until the destructor joins it.
  if (!owned->initPending.load(std::memory_order_acquire) && owned->impl) owned->impl->executionGate().retire();
}

Status initRank(hclComm* handle, int nranks, const hclUniqueId& id, int rank, const CommSettings& settings) {
  UniqueIdContents contents;
  HCL_TRY(decodeUniqueId(id, contents));
  std::unique_ptr<Oob> oob;
  HCL_TRY(connectBootstrap(id, nranks, rank, settings.timeoutMs, &handle->initAbort, oob));
  std::shared_ptr<Communicator> comm;
  HCL_TRY(initCommunicator(*oob, nranks, rank, contents.secret, rootCommTag(contents.secret), settings,
                           &handle->initAbort, comm));
  handle->impl = std::move(comm);
  return {};
}

hclResult_t initRankApiThrowing(const char* call, hclComm_t* comm, int nranks, hclUniqueId commId, int rank,
                                hclConfig_t* config) {
  logVersionOnce();
  Status s;
  if (!comm) s = invalidArgument("comm (the output pointer) is NULL");
  if (s.ok() && (nranks < 1 || nranks > bootwire::kMaxRanks)) {
    s = invalidArgument(fmt::format("nranks {} must be between 1 and {}", nranks, bootwire::kMaxRanks));
  }
  if (s.ok()) s = checkRank("rank", rank, nranks);
  if (s.ok()) s = checkConfig(config);
  UniqueIdContents contents;
  if (s.ok()) s = decodeUniqueId(commId, contents);
  CommSettings settings;
  if (s.ok()) {
    settings = settingsFromParams(config);
    s = chooseDevice(settings);
  }
  if (!s.ok()) {
    if (comm) *comm = nullptr;  // as NCCL: a refused init hands out no communicator
    return report(failGroup(s.withContext(call)));
  }
  hclComm* handle = newHandle();
  auto fill = [handle, nranks, commId, rank, settings, call] {
    return initRank(handle, nranks, commId, rank, settings).withContext(call);
  };
  handle->initCancellable = true;
  // *comm is handed out once the handle says its init is pending: a
  // watchdog thread that reads it may then abort the init (which stops it),
  // and its destroy is refused instead of freeing the handle under the init.
  if (inGroup()) {
    deferCreation(handle, fill);
    *comm = handle;
    return hclSuccess;
  }
  if (!settings.blocking) {
    s = startInBackground(handle, fill);
    if (s.ok()) {
      *comm = handle;
      return hclInProgress;
    }
  } else {
    markInitRunning(handle);
    *comm = handle;
    s = initRank(handle, nranks, commId, rank, settings);
  }
  // Who frees a failed init's handle is decided while it is still pending:
  // once settled, an abort waiting for the init frees it, and its address
  // may then already belong to a new communicator.
  const bool ours = !s.ok() && unregisterHandleIf(handle, [handle] {
    return !handle->initAbort.load(std::memory_order_acquire);
  });
  if (ours) {
    std::unique_ptr<hclComm> owned(handle);
  } else {
    settleInit(handle, s);  // an abort waiting for the init may free the handle from here on
  }
  if (!s.ok()) *comm = nullptr;
  return report(s.withContext(call));
}

// Out of memory (a std::function, a handle) must not cross the C API either.
template <typename Fn>
hclResult_t resultNoThrow(const char* call, Fn&& fn) {
  hclResult_t result = hclSuccess;
  const Status s = noThrow(call, [&]() -> Status {
    result = fn();
    return {};
  });
  return s.ok() ? result : report(s);
}

hclResult_t initRankApi(const char* call, hclComm_t* comm, int nranks, hclUniqueId commId, int rank,
                        hclConfig_t* config) {
  return resultNoThrow(call, [&] { return initRankApiThrowing(call, comm, nranks, commId, rank, config); });
}

}  // namespace

extern "C" {

hclResult_t hclGetVersion(int* version) {
  if (!version) return report(invalidArgument("hclGetVersion: version is NULL"));
  *version = HCL_VERSION_CODE;
  return hclSuccess;
}

hclResult_t hclGetUniqueId(hclUniqueId* uniqueId) {
  logVersionOnce();
  if (!uniqueId) return report(invalidArgument("hclGetUniqueId: uniqueId is NULL"));
  return report(createUniqueId(uniqueId).withContext("hclGetUniqueId"));
}

hclResult_t hclCommInitRank(hclComm_t* comm, int nranks, hclUniqueId commId, int rank) {
  return initRankApi("hclCommInitRank", comm, nranks, commId, rank, nullptr);
}

hclResult_t hclCommInitRankConfig(hclComm_t* comm, int nranks, hclUniqueId commId, int rank, hclConfig_t* config) {
  return initRankApi("hclCommInitRankConfig", comm, nranks, commId, rank, config);
}

hclResult_t hclCommInitRankScalable(hclComm_t* newcomm, int nranks, int myrank, int nId, hclUniqueId* commIds,
                                    hclConfig_t* config) {
  Status s;
  if (nId < 1 || nId > std::max(nranks, 1)) {
    s = invalidArgument(fmt::format("nId {} must be from 1 to nranks ({})", nId, nranks));
  } else if (!commIds) {
    s = invalidArgument("commIds is NULL");
  }
  if (!s.ok()) {
    if (newcomm) *newcomm = nullptr;
    return report(failGroup(s.withContext("hclCommInitRankScalable")));
  }
  // Every rank joins the first root; the others are not needed to form the
  // communicator, and those this process runs would wait for ever.
  for (int i = 1; i < nId; ++i) {
    if (std::memcmp(&commIds[i], &commIds[0], sizeof(hclUniqueId)) != 0) releaseUnusedUniqueId(commIds[i]);
  }
  return initRankApi("hclCommInitRankScalable", newcomm, nranks, commIds[0], myrank, config);
}

static hclResult_t initAllThrowing(hclComm_t* comms, int ndev, const int* devlist) {
  logVersionOnce();
  if (!comms) return report(invalidArgument("hclCommInitAll: comms is NULL"));
  if (ndev < 0 || ndev > kMaxInitAllRanks) {
    return report(invalidArgument(fmt::format("hclCommInitAll: ndev {} must be between 0 and {}", ndev, kMaxInitAllRanks)));
  }
  if (ndev == 0) return hclSuccess;  // as NCCL: nothing to create
  for (int r = 0; devlist && r < ndev; ++r) {
    if (devlist[r] < 0) {
      return report(invalidArgument(fmt::format("hclCommInitAll: devlist[{}] is {}, not a device index", r, devlist[r])));
    }
  }
  // Devices first: an id made for a refused call would keep its root running.
  Status s;
  std::vector<CommSettings> settings(static_cast<size_t>(ndev), settingsFromParams(nullptr));
  for (int r = 0; r < ndev && s.ok(); ++r) s = chooseDevice(settings[static_cast<size_t>(r)], devlist ? devlist[r] : -1);
  hclUniqueId id;
  if (s.ok()) s = createUniqueId(&id);
  if (!s.ok()) return report(s.withContext("hclCommInitAll"));
  std::vector<hclComm*> handles(static_cast<size_t>(ndev));
  std::vector<Status> results(static_cast<size_t>(ndev));
  for (hclComm*& handle : handles) handle = newHandle();
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < ndev && s.ok(); ++r) {
      s = noThrow("starting an init thread", [&]() -> Status {
        threads.emplace_back([&, r] {
          results[static_cast<size_t>(r)] =
              initRank(handles[static_cast<size_t>(r)], ndev, id, r, settings[static_cast<size_t>(r)]);
        });
        return {};
      });
    }
    // Ranks already started would wait for the missing ones until the timeout.
    if (!s.ok()) {
      for (hclComm* handle : handles) handle->initAbort.store(true, std::memory_order_release);
    }
  }
  for (const Status& r : results) {
    if (!r.ok() && s.ok()) s = r;
  }
  for (int r = 0; r < ndev; ++r) {
    if (s.ok()) {
      comms[r] = handles[static_cast<size_t>(r)];
    } else {
      deleteHandle(handles[static_cast<size_t>(r)]);
      comms[r] = nullptr;
    }
  }
  return report(s.withContext("hclCommInitAll"));
}

hclResult_t hclCommInitAll(hclComm_t* comms, int ndev, const int* devlist) {
  return resultNoThrow("hclCommInitAll", [&] { return initAllThrowing(comms, ndev, devlist); });
}

// The settings of a communicator made from `parent`: the config's, with the
// parent's name and network unless the config (or, for the network, the
// environment) names them, on the parent's device.
static CommSettings childSettings(Communicator& parent, const hclConfig_t* config) {
  CommSettings settings = settingsFromParams(config);
  if (!configCommName(config)) settings.name = parent.settings().name;
  if (settings.netName.empty()) {
    settings.netName = parent.settings().netName;
    settings.netNameFrom = parent.settings().netNameFrom;
  }
  settings.device = &parent.device();
  return settings;
}

// Makes a communicator from a parent now, or, as NCCL does inside a group,
// at hclGroupEnd beside the group's other inits (so that one thread can
// split or shrink several ranks). `none`: this rank gets no communicator.
static hclResult_t createChild(const char* call, hclComm_t comm, const Communicator* parent, hclComm_t* newcomm,
                               bool none, std::function<Status(std::shared_ptr<Communicator>&)> make) {
  *newcomm = nullptr;
  if (inGroup()) {
    hclComm* handle = none ? nullptr : newHandle();
    *newcomm = handle;
    deferCreation(
        handle,
        [call, make = std::move(make), handle] {
          std::shared_ptr<Communicator> child;
          Status r = make(child).withContext(call);
          if (handle) handle->impl = std::move(child);
          return r;
        },
        parent);
    return hclSuccess;
  }
  std::shared_ptr<Communicator> child;
  const Status s = make(child);
  if (s.ok() && child) {
    hclComm* handle = newHandle();
    handle->impl = std::move(child);
    *newcomm = handle;
  }
  return report(s.withContext(call), comm);
}

hclResult_t hclCommSplit(hclComm_t comm, int color, int key, hclComm_t* newcomm, hclConfig_t* config) {
  std::shared_ptr<Communicator> parent;
  // A revoked communicator can still be split; a failed or aborted one cannot.
  Status s = checkCommEvenIfFailed(comm, parent);
  if (s.ok() && !parent->revoked()) s = checkComm(comm, parent);
  if (s.ok() && !newcomm) s = invalidArgument("newcomm is NULL");
  if (s.ok() && color < 0 && color != HCL_SPLIT_NOCOLOR) {
    s = invalidArgument(fmt::format("color {} must be non-negative or HCL_SPLIT_NOCOLOR", color));
  }
  if (s.ok()) *newcomm = nullptr;  // as NCCL: also where the config is refused
  if (s.ok()) s = checkConfig(config);
  if (!s.ok()) return report(failGroup(s.withContext("hclCommSplit")), comm);
  const CommSettings settings = childSettings(*parent, config);
  return createChild("hclCommSplit", comm, parent.get(), newcomm, color == HCL_SPLIT_NOCOLOR,
                     [parent, color, key, settings](std::shared_ptr<Communicator>& child) {
                       return splitCommunicator(parent, color, key, settings, child);
                     });
}

static Status checkExcludedRanks(const Communicator& parent, const int* list, int count, std::vector<int>& out) {
  // As NCCL: a shrink excludes at least one rank (a split keeps them all).
  const int n = parent.nranks();
  if (!list) return invalidArgument(fmt::format("excludeRanksList is NULL (excludeRanksCount {})", count));
  if (n == 1) return invalidArgument("excludeRanksCount: a communicator of 1 rank has no other rank to exclude");
  if (count < 1 || count >= n) {
    return invalidArgument(fmt::format("excludeRanksCount {} must be from 1 to {} (a communicator of {} ranks)", count,
                                       n - 1, n));
  }
  out.assign(list, list + count);
  for (int i = 0; i < count; ++i) {
    const int r = out[static_cast<size_t>(i)];
    if (r < 0 || r >= n) {
      return invalidArgument(fmt::format("excludeRanksList[{}] = {} is out of range for a communicator of {} ranks", i,
                                         r, n));
    }
    if (r == parent.rank()) {
      return invalidArgument(fmt::format("excludeRanksList[{}] = {} is the calling rank; excluded ranks do not call "
                                         "hclCommShrink", i, r));
    }
    if (std::find(out.begin(), out.begin() + i, r) != out.begin() + i) {
      return invalidArgument(fmt::format("excludeRanksList[{}] = {} is listed twice", i, r));
    }
  }
  return {};
}

hclResult_t hclCommShrink(hclComm_t comm, int* excludeRanksList, int excludeRanksCount, hclComm_t* newcomm,
                          hclConfig_t* config, int shrinkFlags) {
  std::shared_ptr<Communicator> parent;
  std::vector<int> excluded;
  // Shrinking is how survivors leave a failed or aborted communicator.
  Status s = checkCommEvenIfFailed(comm, parent);
  if (s.ok() && !newcomm) s = invalidArgument("newcomm is NULL");
  if (s.ok()) s = checkExcludedRanks(*parent, excludeRanksList, excludeRanksCount, excluded);
  if (s.ok() && shrinkFlags != HCL_SHRINK_DEFAULT && shrinkFlags != HCL_SHRINK_ABORT) {
    s = invalidArgument(fmt::format("shrinkFlags {:#x} is not HCL_SHRINK_DEFAULT or HCL_SHRINK_ABORT", shrinkFlags));
  }
  if (s.ok()) *newcomm = nullptr;  // as NCCL: also where the config is refused
  if (s.ok()) s = checkConfig(config);
  if (!s.ok()) return report(failGroup(s.withContext("hclCommShrink")), comm);
  const CommSettings settings = childSettings(*parent, config);
  const bool abortParent = shrinkFlags == HCL_SHRINK_ABORT;
  return createChild("hclCommShrink", comm, parent.get(), newcomm, false,
                     [parent, excluded, abortParent, settings](std::shared_ptr<Communicator>& child) {
                       return shrinkCommunicator(parent, excluded, abortParent, settings, child);
                     });
}

hclResult_t hclCommRevoke(hclComm_t comm, int revokeFlags) {
  std::shared_ptr<Communicator> impl;
  // Revoking is what a rank does once it knows the communicator has failed.
  Status s = checkCommEvenIfFailed(comm, impl);
  if (s.ok() && revokeFlags != HCL_REVOKE_DEFAULT) {
    s = invalidArgument(fmt::format("revokeFlags {:#x} is not HCL_REVOKE_DEFAULT", revokeFlags));
  }
  if (s.ok() && inGroup()) s = invalidUsage("cannot be called inside a group (call hclGroupEnd first)");
  if (!s.ok()) return report(s.withContext("hclCommRevoke"), comm);
  // Returns once no operation of this rank runs on the communicator.
  impl->revoke();
  return hclSuccess;
}

hclResult_t hclCommFinalize(hclComm_t comm) {
  Status s;
  const bool live = comm && withLiveHandle(comm, [&] {
    if (comm->initPending.load(std::memory_order_acquire)) {
      s = checkNotPending("hclCommFinalize", comm);
    } else if (!comm->impl) {
      s = {comm->initStatus.code(), "hclCommFinalize: comm failed to initialize: " + comm->initStatus.message()};
    } else if (comm->impl->revoked()) {
      s = invalidUsage("hclCommFinalize: comm was revoked (hclCommRevoke); finalize is not supported after a "
                       "revoke, destroy it with hclCommDestroy");
    } else {
      // Blocking operations are complete when they return; stream
      // operations are the caller's to synchronize, as with NCCL. A second
      // finalize changes nothing.
      comm->impl->markFinalized();
    }
  });
  if (!live) {
    return report(invalidArgument(fmt::format("hclCommFinalize: comm {} is not a valid communicator",
                                              static_cast<const void*>(comm))));
  }
  if (!s.ok()) return report(s, comm);
  return hclSuccess;
}

// Destroy and abort check the handle while it cannot be freed: a watchdog's
// abort may race the blocked thread's destroy of the same communicator.
hclResult_t hclCommDestroy(hclComm_t comm) {
  if (!comm) return hclSuccess;  // like NCCL: destroying NULL is a no-op
  Status pending;
  if (!withLiveHandle(comm, [&] { pending = checkNotPending("hclCommDestroy", comm); })) {
    return report(invalidArgument(fmt::format("hclCommDestroy: comm {} is not a valid communicator (destroyed twice?)",
                                              static_cast<const void*>(comm))));
  }
  if (!pending.ok()) return report(pending);
  log::info(log::Destroy, "hclCommDestroy comm {}", static_cast<const void*>(comm));
  deleteHandle(comm);
  return hclSuccess;
}

hclResult_t hclCommAbort(hclComm_t comm) {
  if (!comm) return hclSuccess;
  Status refused;
  const bool live = withLiveHandle(comm, [&] {
    if (!comm->initPending.load(std::memory_order_acquire)) return;
    if (!comm->initRunning.load(std::memory_order_acquire)) {
      refused = checkNotPending("hclCommAbort", comm);
    } else if (!comm->initCancellable) {
      refused = invalidUsage(fmt::format("hclCommAbort: comm {} is being made by a split or shrink at hclGroupEnd, "
                                         "which cannot be stopped; it ends by itself, at the latest after "
                                         "HCL_TIMEOUT_MS", static_cast<const void*>(comm)));
    }
  });
  if (!live) {
    return report(invalidArgument(fmt::format("hclCommAbort: comm {} is not a valid communicator",
                                              static_cast<const void*>(comm))));
  }
  if (!refused.ok()) return report(refused);
  if (!stopRunningInit(comm)) {
    // A reference of our own: the thread whose operation this abort stops
    // may destroy the handle while the abort still runs.
    std::shared_ptr<Communicator> impl;
    withLiveHandle(comm, [&] { impl = comm->impl; });
    if (impl) impl->requestAbort();
  }
  deleteHandle(comm);
  return hclSuccess;
}

}  // extern "C"
