// Bookkeeping collectives over every rank of the run (all threads of all
// processes): barriers, reductions of timings and error counts, and the
// exchange of device records. They travel over HCL itself, on the world
// communicators, so they work the same whether the processes were started by
// MPI, by another launcher or not at all.
//
// A caller is whoever drives a set of ranks: one benchmark thread (its -g
// ranks) or a whole process (all its ranks) outside the benchmark. Every
// caller must make the same calls in the same order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "hcl.h"

namespace hcl::perf {

class WorldOps {
 public:
  explicit WorldOps(std::vector<hclComm_t> worldComms) : comms_(std::move(worldComms)) {}

  Status barrier();
  // Combines one value per caller with op (sum, min or max).
  Status reduce(double& value, hclRedOp_t op);
  Status reduce(int64_t& value, hclRedOp_t op);
  // Element-wise max of one vector per caller (the same length everywhere).
  Status maxEach(std::vector<double>& values);
  // `mine` holds one record of `recordBytes` per driven rank, in their order;
  // `all` receives every world rank's record in world-rank order.
  Status allgather(std::span<const uint8_t> mine, size_t recordBytes, std::vector<uint8_t>& all);

 private:
  Status allreduce(const void* contribution, const void* neutral, size_t count, hclDataType_t type, hclRedOp_t op,
                   void* out);

  std::vector<hclComm_t> comms_;
};

}  // namespace hcl::perf
