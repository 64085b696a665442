#include "collectives/algorithms/hier_groups.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace hcl::hier {

std::vector<Level> usableLevels(const CollArgs& a) {
  std::vector<Level> levels;
  if (a.topology == nullptr) return levels;
  for (const Level& level : a.topology->levels) {
    const bool coversEveryRank = level.size() == static_cast<size_t>(a.nranks);
    const bool idsValid = std::none_of(level.begin(), level.end(), [](int g) { return g < 0; });
    if (coversEveryRank && idsValid) levels.push_back(level);
  }
  return levels;
}

bool Split::trivial() const {
  const bool allSingle =
      std::all_of(groups.begin(), groups.end(), [](const auto& g) { return g.size() == 1; });
  return groups.size() <= 1 || allSingle;
}

std::vector<size_t> Split::column(size_t j) const {
  std::vector<size_t> col;
  col.reserve(groups.size());
  for (const auto& g : groups) col.push_back(g[j]);
  return col;
}

Split splitAt(const std::vector<int>& ranks, const Level& groupOf, int me) {
  Split s;
  std::map<int, size_t> groupIndex;
  for (size_t p = 0; p < ranks.size(); ++p) {
    const auto [it, fresh] = groupIndex.try_emplace(groupOf[static_cast<size_t>(ranks[p])], s.groups.size());
    if (fresh) s.groups.emplace_back();
    std::vector<size_t>& group = s.groups[it->second];
    if (ranks[p] == me) {
      s.myGroup = it->second;
      s.myIndex = group.size();
    }
    group.push_back(p);
  }
  s.owners = ranks.size();
  for (const auto& g : s.groups) s.owners = std::min(s.owners, g.size());
  return s;
}

size_t nextSplittingLevel(const std::vector<Level>& levels, size_t from, const std::vector<int>& ranks,
                          int me, Split& split) {
  for (size_t l = from; l < levels.size(); ++l) {
    split = splitAt(ranks, levels[l], me);
    if (!split.trivial()) return l;
  }
  return levels.size();
}

std::vector<int> ranksAt(const std::vector<int>& ranks, const std::vector<size_t>& positions) {
  std::vector<int> out;
  out.reserve(positions.size());
  for (size_t p : positions) out.push_back(ranks[p]);
  return out;
}

namespace {

// Links of `me` along a chain that starts at `head` and follows `members`
// (cyclically) from there.
void linkAlongChain(const std::vector<int>& members, int head, int me, TreeLinks& links) {
  const auto headAt = std::find(members.begin(), members.end(), head);
  std::vector<int> chain(headAt, members.end());
  chain.insert(chain.end(), members.begin(), headAt);
  const auto at = std::find(chain.begin(), chain.end(), me);
  if (at == chain.end()) return;
  if (at != chain.begin()) links.parent = *(at - 1);
  if (at + 1 != chain.end()) links.children.push_back(*(at + 1));
}

// `ranks` all get the data from `source`; `depth` levels remain to be used,
// outermost first.
void descend(const std::vector<Level>& levels, size_t depth, const std::vector<int>& ranks, int source,
             int me, TreeLinks& links) {
  if (depth == 0) {
    linkAlongChain(ranks, source, me, links);
    return;
  }
  const Split split = splitAt(ranks, levels[depth - 1], me);
  std::vector<int> representatives;
  for (const auto& group : split.groups) {
    const std::vector<int> members = ranksAt(ranks, group);
    const bool holdsSource = std::find(members.begin(), members.end(), source) != members.end();
    representatives.push_back(holdsSource ? source : members.front());
  }
  linkAlongChain(representatives, source, me, links);
  descend(levels, depth - 1, ranksAt(ranks, split.mine()), representatives[split.myGroup], me, links);
}

}  // namespace

TreeLinks broadcastTree(const std::vector<Level>& levels, int nranks, int root, int me) {
  std::vector<int> everyone(static_cast<size_t>(nranks));
  std::iota(everyone.begin(), everyone.end(), 0);
  TreeLinks links;
  descend(levels, levels.size(), everyone, root, me, links);
  return links;
}

}  // namespace hcl::hier
