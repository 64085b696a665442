#include "collectives/plan/plan_table.h"

#include <bit>

#include "core/wire.h"

namespace hcl {
namespace {
constexpr uint32_t kTableMagic = 0x48434C54;  // "HCLT"
}

int PlanTable::bucketFor(size_t bytes) {
  if (bytes <= 1) return 0;
  const int b = static_cast<int>(std::bit_width(bytes - 1));
  return b < kBuckets ? b : kBuckets - 1;
}

const PlanChoice* PlanTable::find(CollKind kind, size_t bytes) const {
  const size_t k = static_cast<size_t>(kind);
  if (k >= choices.size() || choices[k].empty()) return nullptr;
  return &choices[k][static_cast<size_t>(bucketFor(bytes))];
}

std::vector<uint8_t> PlanTable::serialize() const {
  WireWriter w;
  w.put(kTableMagic);
  w.putBytes(graph.serialize());
  w.put<uint32_t>(static_cast<uint32_t>(topology.levels.size()));
  for (const auto& level : topology.levels) {
    w.put<uint32_t>(static_cast<uint32_t>(level.size()));
    for (int g : level) w.put<int32_t>(g);
  }
  w.put<uint32_t>(static_cast<uint32_t>(choices.size()));
  for (const auto& perKind : choices) {
    w.put<uint32_t>(static_cast<uint32_t>(perKind.size()));
    for (const PlanChoice& c : perKind) {
      w.putString(c.algorithm);
      w.put(c.estimatedUs);
      w.put<uint32_t>(static_cast<uint32_t>(c.linkClasses.size()));
      for (const auto& cls : c.linkClasses) w.putString(cls);
      w.putString(c.candidates);
      w.putString(c.withoutPeerAccess);
    }
  }
  return w.take();
}

bool PlanTable::deserialize(const uint8_t* data, size_t size, PlanTable& out) {
  WireReader r(data, size);
  uint32_t magic = 0, nlevels = 0, nkinds = 0;
  std::vector<uint8_t> graphBytes;
  if (!r.get(magic) || magic != kTableMagic || !r.getBytes(graphBytes)) return false;
  out = PlanTable{};
  if (!LinkGraph::deserialize(graphBytes.data(), graphBytes.size(), out.graph)) return false;
  if (!r.get(nlevels) || nlevels > 8) return false;
  for (uint32_t l = 0; l < nlevels; ++l) {
    uint32_t n = 0;
    if (!r.get(n) || n != static_cast<uint32_t>(out.graph.nranks)) return false;
    std::vector<int> level(n);
    for (int& g : level) {
      int32_t v = 0;
      r.get(v);
      if (v < 0 || v >= static_cast<int32_t>(n)) return false;
      g = v;
    }
    out.topology.levels.push_back(std::move(level));
  }
  if (!r.get(nkinds) || nkinds > 64) return false;
  out.choices.resize(nkinds);
  for (auto& perKind : out.choices) {
    uint32_t nb = 0;
    if (!r.get(nb) || (nb != 0 && nb != static_cast<uint32_t>(kBuckets))) return false;
    perKind.resize(nb);
    for (PlanChoice& c : perKind) {
      uint32_t ncls = 0;
      r.getString(c.algorithm);
      r.get(c.estimatedUs);
      if (!r.get(ncls) || ncls > 4096) return false;
      c.linkClasses.resize(ncls);
      for (auto& cls : c.linkClasses) r.getString(cls);
      r.getString(c.candidates);
      r.getString(c.withoutPeerAccess);
    }
  }
  return r.ok() && r.atEnd();
}

}  // namespace hcl
