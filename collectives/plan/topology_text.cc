#include "collectives/plan/topology_text.h"

#include <fmt/format.h>

#include <charconv>
#include <sstream>

namespace hcl {
namespace {

std::string levelsText(const Topology& topology, bool runs) {
  std::string out;
  for (const auto& level : topology.levels) {
    if (!out.empty()) out += "; ";
    bool first = true;
    for (size_t r = 0; r < level.size();) {
      size_t end = r + 1;
      if (runs) {
        while (end < level.size() && level[end] == level[r]) ++end;
      }
      out += first ? "" : " ";
      out += end - r > 1 ? fmt::format("{}*{}", level[r], end - r) : fmt::format("{}", level[r]);
      first = false;
      r = end;
    }
  }
  return out;
}

}  // namespace

std::string topologyText(const Topology& topology, size_t capacity) {
  for (bool runs : {false, true}) {
    std::string text = levelsText(topology, runs);
    if (text.size() < capacity) return text;
  }
  return {};
}

Topology parseTopologyText(std::string_view text, int nranks) {
  Topology topology;
  std::istringstream levels{std::string(text)};
  std::string level;
  while (std::getline(levels, level, ';')) {
    std::istringstream items(level);
    std::vector<int> groups;
    std::string item;
    bool wellFormed = true;
    while (items >> item && wellFormed) {
      int id = 0, count = 1;
      const size_t star = item.find('*');
      const char* end = item.data() + (star == std::string::npos ? item.size() : star);
      wellFormed = std::from_chars(item.data(), end, id).ptr == end;
      if (wellFormed && star != std::string::npos) {
        const char* last = item.data() + item.size();
        wellFormed = std::from_chars(item.data() + star + 1, last, count).ptr == last && count > 0 &&
                     count <= nranks;
      }
      if (wellFormed) groups.insert(groups.end(), static_cast<size_t>(count), id);
    }
    if (wellFormed && static_cast<int>(groups.size()) == nranks) topology.levels.push_back(std::move(groups));
  }
  return topology;
}

}  // namespace hcl
