#include "core/host_cpus.h"

#include <sched.h>

#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <utility>

namespace hcl {
namespace {

// The ranks of one host and the union of their CPU masks.
struct HostCpus {
  size_t ranks = 0;
  std::vector<uint64_t> cpus;
  bool unknown = false;  // some rank published no mask

  void add(const PeerInfo& p) {
    ++ranks;
    if (p.cpuMask.empty()) unknown = true;
    if (cpus.size() < p.cpuMask.size()) cpus.resize(p.cpuMask.size(), 0);
    for (size_t w = 0; w < p.cpuMask.size(); ++w) cpus[w] |= p.cpuMask[w];
  }
  bool oversubscribed() const {
    if (unknown) return false;
    size_t distinct = 0;
    for (uint64_t word : cpus) distinct += static_cast<size_t>(std::popcount(word));
    return ranks > distinct;
  }
};

}  // namespace

std::vector<uint64_t> currentCpuMask() {
  // Large enough for any machine HCL runs on; the kernel fails the call
  // (EINVAL) only where the set is smaller than its own CPU count.
  constexpr int kMaxCpus = 8192;
  const size_t bytes = CPU_ALLOC_SIZE(kMaxCpus);
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set(CPU_ALLOC(kMaxCpus), [](cpu_set_t* s) { CPU_FREE(s); });
  if (!set) return {};
  CPU_ZERO_S(bytes, set.get());
  if (sched_getaffinity(0, bytes, set.get()) != 0) return {};
  std::vector<uint64_t> mask((kMaxCpus + 63) / 64, 0);
  for (int cpu = 0; cpu < kMaxCpus; ++cpu) {
    if (CPU_ISSET_S(static_cast<size_t>(cpu), bytes, set.get())) mask[static_cast<size_t>(cpu / 64)] |= uint64_t{1} << (cpu % 64);
  }
  while (!mask.empty() && mask.back() == 0) mask.pop_back();
  return mask;
}

bool hostOversubscribed(const std::vector<PeerInfo>& peers, const std::string& hostId) {
  HostCpus host;
  for (const PeerInfo& p : peers) {
    if (p.hostId == hostId) host.add(p);
  }
  return host.oversubscribed();
}

bool anyHostOversubscribed(const std::vector<PeerInfo>& peers) {
  std::map<std::string, HostCpus> hosts;
  for (const PeerInfo& p : peers) hosts[p.hostId].add(p);
  return std::any_of(hosts.begin(), hosts.end(), [](const auto& h) { return h.second.oversubscribed(); });
}

std::vector<int> sharedCpuPairingOrder(const std::vector<PeerInfo>& peers) {
  const size_t n = peers.size();
  if (n < 4 || !std::has_single_bit(n)) return {};
  // Ranks with the same mask on the same host, groups in the order of their
  // lowest rank (peers are in rank order), so every rank derives the same.
  std::vector<std::vector<int>> groups;
  std::map<std::pair<std::string, std::vector<uint64_t>>, size_t> groupOf;
  for (const PeerInfo& p : peers) {
    if (p.cpuMask.empty()) return {};
    const auto [it, added] = groupOf.try_emplace({p.hostId, p.cpuMask}, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(p.rank);
  }
  const size_t k = groups.front().size();
  for (const auto& [key, g] : groupOf) {
    size_t cpus = 0;
    for (uint64_t word : key.second) cpus += static_cast<size_t>(std::popcount(word));
    if (groups[g].size() != k || k <= cpus) return {};
  }
  if (k < 2 || k == n || !std::has_single_bit(k)) return {};
  // Members of a group differ only in the top bits of their place, which
  // recursive doubling's last rounds flip.
  std::vector<int> order(n);
  const size_t stride = n / k;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t t = 0; t < k; ++t) order[static_cast<size_t>(groups[g][t])] = static_cast<int>(g + t * stride);
  }
  return order;
}

}  // namespace hcl
