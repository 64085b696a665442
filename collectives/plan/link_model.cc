#include "collectives/plan/link_model.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/rate.h"
#include "core/wire.h"

namespace hcl {
namespace {

constexpr uint32_t kGraphMagic = 0x48434C47;  // "HCLG"

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Splits "12.5GB/s" into 12.5 and "gb/s".
bool numberAndUnit(std::string_view text, double& value, std::string& unit) {
  const std::string t = lower(text);
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return false;
  unit.assign(end, t.data() + t.size());
  return true;
}

// Link classes are "local", "shm" and "net:<fabric>"; a pattern that can
// match none of them is a typo.
bool canMatchAClass(const std::string& pattern) {
  if (pattern.ends_with('*')) {
    const std::string_view prefix = std::string_view(pattern).substr(0, pattern.size() - 1);
    return std::string_view("local").starts_with(prefix) || std::string_view("shm").starts_with(prefix) ||
           std::string_view("net:").starts_with(prefix) || prefix.starts_with("net:");
  }
  return pattern == "local" || pattern == "shm" || (pattern.starts_with("net:") && pattern.size() > 4);
}

bool matches(const std::string& pattern, const std::string& name) {
  if (pattern.ends_with('*')) return name.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  return pattern == name;
}

}  // namespace

int LinkGraph::addClass(const std::string& name, const LinkCost& cost, bool isIntraHost) {
  const auto it = std::find(classNames.begin(), classNames.end(), name);
  if (it != classNames.end()) return static_cast<int>(it - classNames.begin());
  classNames.push_back(name);
  costs.push_back(cost);
  intraHost.push_back(isIntraHost);
  return static_cast<int>(classNames.size() - 1);
}

std::vector<uint8_t> LinkGraph::serialize() const {
  WireWriter w;
  w.put(kGraphMagic);
  w.put<int32_t>(nranks);
  w.put(reduceBytesPerUs);
  w.put<uint32_t>(static_cast<uint32_t>(classNames.size()));
  for (size_t c = 0; c < classNames.size(); ++c) {
    w.putString(classNames[c]);
    w.put(costs[c].alphaUs);
    w.put(costs[c].bytesPerUs);
    w.put<uint8_t>(intraHost[c] ? 1 : 0);
  }
  for (int c : classOf) w.put<int32_t>(c);
  return w.take();
}

bool LinkGraph::deserialize(const uint8_t* data, size_t size, LinkGraph& out) {
  WireReader r(data, size);
  uint32_t magic = 0, nclasses = 0;
  int32_t n = 0;
  if (!r.get(magic) || magic != kGraphMagic || !r.get(n) || n < 0 || n > (1 << 20)) return false;
  out = LinkGraph{};
  out.nranks = n;
  r.get(out.reduceBytesPerUs);
  if (!r.get(nclasses) || nclasses > 4096) return false;
  for (uint32_t c = 0; c < nclasses; ++c) {
    std::string name;
    LinkCost cost;
    uint8_t intra = 0;
    r.getString(name);
    r.get(cost.alphaUs);
    r.get(cost.bytesPerUs);
    r.get(intra);
    out.classNames.push_back(std::move(name));
    out.costs.push_back(cost);
    out.intraHost.push_back(intra != 0);
  }
  out.classOf.resize(static_cast<size_t>(n) * static_cast<size_t>(n));
  for (int& c : out.classOf) {
    int32_t v = 0;
    r.get(v);
    if (v < -1 || v >= static_cast<int32_t>(nclasses)) return false;
    c = v;
  }
  return r.ok() && r.atEnd();
}

double parseTimeUs(std::string_view text) {
  double v = 0;
  std::string unit;
  if (!numberAndUnit(text, v, unit)) return -1;
  if (unit.empty() || unit == "us") return v;
  if (unit == "ns") return v / 1000;
  if (unit == "ms") return v * 1000;
  if (unit == "s") return v * 1e6;
  return -1;
}

double parseBandwidth(std::string_view text) {
  const auto bytesPerSecond = parseRateBytesPerSecond(text, RateUnit::Bytes);
  return bytesPerSecond ? *bytesPerSecond / 1e6 : -1;  // bytes per us == MB/s
}

bool parseLinkModel(std::string_view text, std::vector<LinkModelRule>& rules, std::string& error) {
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string pattern, alpha, bandwidth, extra;
    if (!(words >> pattern)) continue;
    if (!(words >> alpha >> bandwidth) || (words >> extra)) {
      error = "line " + std::to_string(number) + ": expected '<class> <alpha> <bandwidth>', got '" + line + "'";
      return false;
    }
    if (!canMatchAClass(pattern)) {
      error = "line " + std::to_string(number) + ": '" + pattern +
              "' matches no link class (classes are local, shm and net:<fabric>; a trailing * matches a prefix)";
      return false;
    }
    LinkModelRule rule{pattern, {parseTimeUs(alpha), parseBandwidth(bandwidth)}};
    if (rule.cost.alphaUs < 0) {
      error = "line " + std::to_string(number) + ": bad latency '" + alpha + "' (e.g. 20us, 1.5ms)";
      return false;
    }
    if (rule.cost.bytesPerUs <= 0) {
      error = "line " + std::to_string(number) + ": bad bandwidth '" + bandwidth + "' (e.g. 12.5GB/s, 125Mbit/s)";
      return false;
    }
    rules.push_back(std::move(rule));
  }
  return true;
}

void applyLinkModel(const std::vector<LinkModelRule>& rules, LinkGraph& graph) {
  for (size_t c = 0; c < graph.classNames.size(); ++c) {
    for (const LinkModelRule& rule : rules) {
      if (matches(rule.pattern, graph.classNames[c])) graph.costs[c] = rule.cost;
    }
  }
}

}  // namespace hcl
