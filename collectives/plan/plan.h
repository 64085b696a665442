// Picks the algorithm for a collective and expands it into a schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/link_model.h"
#include "collectives/plan/plan_table.h"
#include "collectives/plan/schedule.h"
#include "core/cpu_family.h"

namespace hcl {

using ScheduleGenerator = Schedule (*)(const CollArgs&);

// Where an algorithm starts to pay on one CPU family, where that was
// measured to differ from its entry's own minBytes and minTotalBytes.
struct FamilyAdmission {
  CpuFamily family = CpuFamily::Other;
  size_t minBytes = 0;
  size_t minTotalBytes = 0;
  // Where ranks share CPUs, minBytes is this instead (SIZE_MAX: not there).
  std::optional<size_t> minBytesSharedCpus = std::nullopt;
};

struct AlgorithmEntry {
  CollKind kind;
  const char* name;
  ScheduleGenerator generate;
  size_t maxBytes;  // used only up to this message size (0: any size)
  size_t minBytes = 0;  // and only from this size
  // Reads and writes peers' buffers (ReadPeer/WritePeer): only for
  // communicators where every link allows it (Planner::setPeerAccess).
  bool needsPeerAccess = false;
  int maxRanks = 0;  // used only on communicators of at most this many ranks (0: any)
  // And only where the message times the rank count reaches this (0: no
  // limit): what every rank's buffers weigh together on a host.
  size_t minTotalBytes = 0;
  // And only where each rank's share of the message reaches this (0: no
  // limit): for schedules in which every rank works on one shard.
  size_t minShardBytes = 0;
  // Only where every rank has a CPU of its own (Planner::setSharedCpus).
  bool needsOwnCpu = false;
  // And, where ranks share CPUs, only from this size: a floor on top of the
  // others on every family (FamilyAdmission::minBytesSharedCpus instead
  // replaces one family's minBytes).
  size_t minBytesSharedCpus = 0;
  // And, where ranks share CPUs and their count is a power of two (4, 8,
  // ...), only from this size.
  size_t minBytesSharedCpusPowerOfTwo = 0;
  // On the families listed, these replace minBytes and minTotalBytes.
  std::span<const FamilyAdmission> byFamily = {};
};

// Every registered algorithm (collectives/algorithms/registry.cc).
std::span<const AlgorithmEntry> algorithmTable();

// What in an HCL_ALGO / NCCL_ALGO value selects nothing (an unknown
// collective or algorithm), one text per problem; a typo there would
// otherwise quietly leave the default choice in place.
std::vector<std::string> overrideProblems(const std::string& spec);

// The choice for this communicator. `overrideSpec` restricts the candidates
// with NCCL_ALGO's grammar: "ring,tree" or "allreduce:ring;broadcast:^tree";
// "^name" excludes. Algorithms not registered for a collective are ignored.
// With a plan table (built from the link-cost model) the table's choice for
// the size bucket is used; without one, the first allowed entry of the
// registry whose size limit admits the message.
class Planner {
 public:
  explicit Planner(std::string_view overrideSpec = {});
  Schedule plan(const CollArgs& args) const;
  // The algorithm used for `bytes` bytes (count * element size) on `nranks` ranks.
  const char* algorithmFor(CollKind kind, size_t bytes = SIZE_MAX, int nranks = 2) const;
  // The algorithm that plan(args) expands.
  const char* algorithmFor(const CollArgs& args) const;

  // Prices every allowed algorithm on `graph` for each size bucket; the
  // cheapest wins, unless the registry's default is within 10% of it.
  // Above kPricedEveryBucketUpTo ranks, an odd bucket whose two neighbours
  // chose the same algorithm, under the same registry default as its own,
  // takes it without being priced.
  PlanTable buildTable(const LinkGraph& graph, const Topology& topology, size_t chunkBytes) const;
  static constexpr int kPricedEveryBucketUpTo = 32;
  // One bucket's choice, priced on its own.
  PlanChoice priceBucket(CollKind kind, int bucket, const LinkGraph& graph, const Topology& topology,
                         size_t chunkBytes, StepPool& pool) const;
  void setTable(std::shared_ptr<const PlanTable> table) { table_ = std::move(table); }
  // Every rank of the communicator can reach every peer's buffers; agreed by
  // all ranks at init, so every rank makes the same choices.
  void setPeerAccess(bool on) { peerAccess_ = on; }
  bool peerAccess() const { return peerAccess_; }
  // Some host has more ranks than CPUs for them (core/host_cpus.h); every
  // rank derives it from the same peer table, so all choose alike.
  void setSharedCpus(bool on) { sharedCpus_ = on; }
  bool sharedCpus() const { return sharedCpus_; }
  // sharedCpuPairingOrder's result, the same on every rank; empty: rank
  // order. Anything but a permutation of 0..size-1 is ignored.
  void setPairingOrder(std::vector<int> order);
  // The host's CPU family (hostCpuFamily()), for entries measured per family.
  void setCpuFamily(CpuFamily f) { cpuFamily_ = f; }
  CpuFamily cpuFamily() const { return cpuFamily_; }
  const PlanTable* table() const { return table_.get(); }

 private:
  std::vector<const AlgorithmEntry*> allowed(CollKind kind);
  const AlgorithmEntry* choose(const CollArgs& args) const;
  // `peerAccess`: whether this call may use algorithms that reach peers' buffers.
  const AlgorithmEntry* fallback(CollKind kind, size_t bytes, int nranks, bool peerAccess) const;
  bool usable(const AlgorithmEntry& e, size_t bytes, int nranks, bool peerAccess) const;
  // Added because the override left no algorithm for some sizes: used only
  // where no algorithm the override chose runs.
  bool lastResort(const AlgorithmEntry& e) const;
  bool chosenAlgorithmRuns(CollKind kind, size_t bytes, int nranks, bool peerAccess) const;
  std::string spec_;
  bool peerAccess_ = false;
  bool sharedCpus_ = false;
  std::vector<int> pairingOrder_;
  CpuFamily cpuFamily_ = CpuFamily::Other;
  std::vector<const AlgorithmEntry*> named_;  // listed (not excluded) in the override
  std::vector<const AlgorithmEntry*> lastResort_;
  // Decided once per communicator, so a bad override warns once.
  std::vector<std::vector<const AlgorithmEntry*>> allowed_;
  std::shared_ptr<const PlanTable> table_;
};

}  // namespace hcl
