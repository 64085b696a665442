// The ranks one process drives (-t threads x -g ranks each) and what each
// owns: its communicators, stream and buffers.
#pragma once

#include <cstddef>
#include <mutex>
#include <span>
#include <vector>

#include "core/status.h"
#include "hcl.h"
#include "perf/common/launch.h"
#include "perf/common/options.h"

namespace hcl::perf {

// Host memory from hclMemAlloc, freed on destruction.
class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  Status allocate(size_t bytes);
  unsigned char* data() const { return static_cast<unsigned char*>(ptr_); }
  size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct RankSlot {
  int worldRank = 0;
  int localIndex = 0;  // thread * nGpus + gpu
  int rank = 0;        // in `comm`
  int nranks = 1;
  hclComm_t world = nullptr;     // every rank of the run: bookkeeping collectives
  hclComm_t comm = nullptr;      // the collective under test (the world unless NCCL_TESTS_SPLIT*)
  hclStream_t stream = nullptr;  // nullptr with -y 1
  HostBuffer send;
  HostBuffer recv;
  std::vector<unsigned char> expected;
  void* sendHandle = nullptr;  // -R 1
  void* recvHandle = nullptr;
  hclWindow_t sendWindow = nullptr;  // -R 2
  hclWindow_t recvWindow = nullptr;
  hclRedOp_t mulSumOp = hclSum;
  bool hasMulSumOp = false;
  std::vector<int> linkKinds;  // -H: transport kind per peer of `comm`
};

class RankSet {
 public:
  // `color` is this process's group; `split` is false when every process
  // has the same one (then comm == world).
  RankSet(const Options& options, const LaunchInfo& launch, int color, bool split);
  ~RankSet();
  RankSet(const RankSet&) = delete;
  RankSet& operator=(const RankSet&) = delete;

  // Streams, buffers, communicators (created in a group, or by every thread
  // at once with -p 1), the NCCL_TESTS_SPLIT groups and -R registration.
  Status create(const hclUniqueId& id);

  std::span<RankSlot> all() { return slots_; }
  std::span<RankSlot> ofThread(int thread) {
    return std::span<RankSlot>(slots_).subspan(static_cast<size_t>(thread * options_.nGpus),
                                               static_cast<size_t>(options_.nGpus));
  }
  int worldSize() const { return launch_.nProcs * options_.nThreads * options_.nGpus; }

  // Aborts every communicator of this process (once; safe from any thread).
  // Peers see their links fail instead of waiting for a timeout.
  void abortAll();

 private:
  Status initWorld(const hclUniqueId& id);
  Status splitGroups();
  Status registerWindows();

  const Options& options_;
  LaunchInfo launch_;
  int color_;
  bool split_;
  std::vector<RankSlot> slots_;
  std::mutex abortMutex_;
  bool aborted_ = false;
};

std::vector<hclComm_t> worldComms(std::span<const RankSlot> slots);

}  // namespace hcl::perf
