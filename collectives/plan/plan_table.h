// The per-communicator plan: for each collective and message size bucket,
// the algorithm every rank runs, with the cost model's estimate. One rank
// builds it and sends it to the others, so ranks can never disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/plan/collective.h"
#include "collectives/plan/link_model.h"
#include "collectives/plan/topology.h"

namespace hcl {

struct PlanChoice {
  std::string algorithm;
  double estimatedUs = 0;
  std::vector<std::string> linkClasses;  // classes that carry its data
  std::string candidates;                // "ring 120.3 us, tree 98.1 us, ..."
  // Where `algorithm` reaches peers' buffers: what runs instead for a call
  // that may not (PreMulSum, whose load differs per rank). Empty otherwise.
  std::string withoutPeerAccess;
};

struct PlanTable {
  // Buckets are powers of two of the per-call size (count * element size,
  // NCCL's count argument): bucket b covers (2^(b-1), 2^b] bytes; sizes above
  // the last bucket use it.
  static constexpr int kBuckets = 27;  // up to 64 MiB
  static int bucketFor(size_t bytes);
  static size_t bucketBytes(int bucket) { return size_t{1} << bucket; }

  LinkGraph graph;
  Topology topology;
  // choices[kind][bucket]; kinds without a table entry are empty.
  std::vector<std::vector<PlanChoice>> choices;

  const PlanChoice* find(CollKind kind, size_t bytes) const;

  std::vector<uint8_t> serialize() const;
  static bool deserialize(const uint8_t* data, size_t size, PlanTable& out);
};

}  // namespace hcl
