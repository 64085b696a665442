#include "collectives/plan/topology_derive.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace hcl {
namespace {

// Connected components of the ranks under `joined`, numbered by lowest rank.
std::vector<int> components(int n, const std::function<bool(int, int)>& joined) {
  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  const auto find = [&](int x) {
    while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)];
    return x;
  };
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (joined(a, b)) parent[static_cast<size_t>(std::max(find(a), find(b)))] = std::min(find(a), find(b));
  std::vector<int> id(static_cast<size_t>(n), -1), group(static_cast<size_t>(n));
  int next = 0;
  for (int r = 0; r < n; ++r) {
    const int root = find(r);
    if (id[static_cast<size_t>(root)] < 0) id[static_cast<size_t>(root)] = next++;
    group[static_cast<size_t>(r)] = id[static_cast<size_t>(root)];
  }
  return group;
}

int groupCount(const std::vector<int>& g) { return g.empty() ? 0 : *std::max_element(g.begin(), g.end()) + 1; }

}  // namespace

Topology deriveTopology(const LinkGraph& graph) {
  Topology topo;
  const int n = graph.nranks;
  if (n < 3) return topo;
  double slowest = 0;
  bool first = true;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const double bw = graph.costBetween(a, b).bytesPerUs;
      slowest = first ? bw : std::min(slowest, bw);
      first = false;
    }
  const auto intraHost = [&](int a, int b) { return static_cast<bool>(graph.intraHost[static_cast<size_t>(graph.classBetween(a, b))]); };
  const auto fast = [&](int a, int b) { return intraHost(a, b) || graph.costBetween(a, b).bytesPerUs > slowest * 1.5; };
  std::vector<int> host = components(n, intraHost);
  std::vector<int> fabric = components(n, fast);
  const auto useful = [&](const std::vector<int>& g) {
    const int groups = groupCount(g);
    return groups > 1 && groups < n;
  };
  if (useful(host)) topo.levels.push_back(host);
  // Fabric groups are unions of host groups; fewer of them means a new level.
  if (useful(fabric) && (topo.levels.empty() || groupCount(fabric) < groupCount(host))) topo.levels.push_back(fabric);
  return topo;
}

}  // namespace hcl
