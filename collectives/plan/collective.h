// What a schedule generator needs to know about one collective call on one rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/plan/topology.h"
#include "core/cpu_family.h"
#include "core/datatype.h"

namespace hcl {

// Values double as message tags, so a peer running a different collective is
// detected instead of corrupting data.
enum class CollKind : uint8_t {
  AllReduce = 1,
  Broadcast = 2,
  Reduce = 3,
  AllGather = 4,
  ReduceScatter = 5,
  AlltoAll = 6,
  Gather = 7,
  Scatter = 8,
  SendRecv = 9,
  Control = 10,  // internal exchanges (split, init)
};

const char* collKindName(CollKind k);

class StepPool;

struct CollArgs {
  CollKind kind = CollKind::AllReduce;
  int rank = 0;
  int nranks = 1;
  // Elements per the NCCL argument: allreduce/broadcast/reduce count,
  // allgather sendcount, reducescatter recvcount, alltoall/gather/scatter
  // per-rank count.
  size_t count = 0;
  hclDataType_t type = hclFloat32;
  // True when loading a Native operand into accumulator form changes nothing
  // (accumulator is the type itself and there is no pre-multiplication), so
  // sends can go straight from the user's buffer.
  bool loadIsIdentity = true;
  // Loading depends on the rank (a pre-multiplied sum, whose scalar each
  // rank chooses): only a vector's owner may load it, so algorithms that
  // read peers' raw inputs (peer access) cannot be used.
  bool rankDependentLoad = false;
  int root = 0;
  bool inPlace = false;
  size_t chunkBytes = 512 * 1024;  // pipeline slice
  // Rank groups for hierarchical algorithms; null or empty means flat.
  const Topology* topology = nullptr;
  // The host's, set by the planner: some sizes were measured per family.
  CpuFamily cpuFamily = CpuFamily::Other;
  // Some host has more ranks than CPUs for them (Planner::setSharedCpus).
  bool sharedCpus = false;
  // Each rank's place in recursive doubling's pairing, where ranks pinned
  // to shared CPUs should meet last (sharedCpuPairingOrder); null: rank order.
  const std::vector<int>* pairingOrder = nullptr;
  // Where the schedule takes its steps' storage (the planner's, reused
  // between the schedules it prices); null: a new vector.
  StepPool* stepPool = nullptr;
};

// The bytes of this rank's send and receive buffers a call covers (0 for a
// buffer the rank's role leaves alone, such as a broadcast's send buffer
// off the root).
struct CallBufferBytes {
  size_t send = 0, recv = 0;
};
CallBufferBytes callBufferBytes(const CollArgs& a);

}  // namespace hcl
