#include "perf/common/rank_set.h"

#include <fmt/format.h>

#include <new>
#include <thread>
#include <utility>

#include "perf/common/hcl_status.h"

namespace hcl::perf {

HostBuffer::~HostBuffer() {
  if (ptr_) hclMemFree(ptr_);
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) hclMemFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Status HostBuffer::allocate(size_t bytes) {
  PERF_HCL(hclMemAlloc(&ptr_, bytes));
  size_ = bytes;
  return {};
}

std::vector<hclComm_t> worldComms(std::span<const RankSlot> slots) {
  std::vector<hclComm_t> comms;
  for (const RankSlot& s : slots) comms.push_back(s.world);
  return comms;
}

RankSet::RankSet(const Options& options, const LaunchInfo& launch, int color, bool split)
    : options_(options), launch_(launch), color_(color), split_(split) {
  const int local = options.nThreads * options.nGpus;
  slots_.resize(static_cast<size_t>(local));
  for (int i = 0; i < local; ++i) {
    slots_[static_cast<size_t>(i)].localIndex = i;
    slots_[static_cast<size_t>(i)].worldRank = launch.proc * local + i;
  }
}

RankSet::~RankSet() {
  std::lock_guard lock(abortMutex_);
  for (RankSlot& s : slots_) {
    if (!aborted_) {
      if (s.sendHandle) hclCommDeregister(s.comm, s.sendHandle);
      if (s.recvHandle) hclCommDeregister(s.comm, s.recvHandle);
      if (s.sendWindow) hclCommWindowDeregister(s.comm, s.sendWindow);
      if (s.recvWindow) hclCommWindowDeregister(s.comm, s.recvWindow);
      if (s.hasMulSumOp) hclRedOpDestroy(s.mulSumOp, s.comm);
      if (s.comm != s.world) hclCommDestroy(s.comm);
      hclCommDestroy(s.world);
    }
    if (s.stream) hclStreamDestroy(s.stream);
  }
}

void RankSet::abortAll() {
  std::lock_guard lock(abortMutex_);
  if (aborted_) return;
  aborted_ = true;
  for (RankSlot& s : slots_) {
    if (s.comm && s.comm != s.world) hclCommAbort(s.comm);
    if (s.world) hclCommAbort(s.world);
  }
}

Status RankSet::initWorld(const hclUniqueId& id) {
  const int n = worldSize();
  // Inits inside a group run concurrently at hclGroupEnd, so one thread can
  // create every rank it drives.
  auto initGroup = [&](std::span<RankSlot> slots) -> Status {
    PERF_HCL(hclGroupStart());
    Status first;
    for (RankSlot& s : slots) {
      const hclResult_t r = hclCommInitRank(&s.world, n, id, s.worldRank);
      if (r != hclSuccess && first.ok()) first = hclCallStatus(r, "hclCommInitRank");
    }
    const hclResult_t end = hclGroupEnd();
    if (first.ok() && end != hclSuccess) first = hclCallStatus(end, "hclGroupEnd() after hclCommInitRank");
    return first;
  };
  if (!options_.parallelInit) return initGroup(slots_);
  std::vector<Status> results(static_cast<size_t>(options_.nThreads));
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < options_.nThreads; ++t) {
      threads.emplace_back([&, t] { results[static_cast<size_t>(t)] = initGroup(ofThread(t)); });
    }
  }
  for (Status& s : results) {
    if (!s.ok()) return s;
  }
  return {};
}

Status RankSet::splitGroups() {
  if (!split_) {
    for (RankSlot& s : slots_) s.comm = s.world;
    return {};
  }
  // hclCommSplit is blocking and collective: every local rank calls it from
  // its own thread.
  std::vector<Status> results(slots_.size());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < slots_.size(); ++i) {
      threads.emplace_back([&, i] {
        RankSlot& s = slots_[i];
        const hclResult_t r = hclCommSplit(s.world, color_, s.worldRank, &s.comm, nullptr);
        if (r != hclSuccess) results[i] = hclCallStatus(r, "hclCommSplit");
      });
    }
  }
  for (Status& s : results) {
    if (!s.ok()) return s;
  }
  return {};
}

// Collective: one group registers every local rank's windows, as
// nccl-tests' -R 2 does; a refused registration fails hclGroupEnd.
Status RankSet::registerWindows() {
  PERF_HCL(hclGroupStart());
  for (RankSlot& s : slots_) {
    hclCommWindowRegister(s.comm, s.send.data(), s.send.size(), &s.sendWindow, HCL_WIN_COLL_SYMMETRIC);
    hclCommWindowRegister(s.comm, s.recv.data(), s.recv.size(), &s.recvWindow, HCL_WIN_COLL_SYMMETRIC);
  }
  PERF_HCL(hclGroupEnd());
  return {};
}

Status RankSet::create(const hclUniqueId& id) {
  const size_t bytes = options_.maxBytes + static_cast<size_t>(options_.unalign) * 8 + 64;
  for (RankSlot& s : slots_) {
    if (!options_.streamNull) PERF_HCL(hclStreamCreate(&s.stream));
    HCL_TRY(s.send.allocate(bytes));
    HCL_TRY(s.recv.allocate(bytes));
    if (options_.check) {
      try {
        s.expected.resize(bytes);
      } catch (const std::bad_alloc&) {
        return systemError(fmt::format("cannot allocate the {} bytes of the check buffer (-e {} is more than this "
                                       "host's memory allows?)",
                                       bytes, options_.maxBytes));
      }
    }
  }
  HCL_TRY(initWorld(id));
  HCL_TRY(splitGroups());
  for (RankSlot& s : slots_) {
    PERF_HCL(hclCommUserRank(s.comm, &s.rank));
    PERF_HCL(hclCommCount(s.comm, &s.nranks));
    if (options_.localRegister == 1) {
      PERF_HCL(hclCommRegister(s.comm, s.send.data(), s.send.size(), &s.sendHandle));
      PERF_HCL(hclCommRegister(s.comm, s.recv.data(), s.recv.size(), &s.recvHandle));
    }
  }
  if (options_.localRegister == 2) HCL_TRY(registerWindows());
  return {};
}

}  // namespace hcl::perf
