// The link-cost model: every pair of ranks is joined by a link of some class
// ("local", "shm", "net:<fabric>"), and each class has a latency (alpha) and
// a bandwidth (beta). Algorithms are priced on this graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hcl {

struct LinkCost {
  double alphaUs = 0;      // per-message latency
  double bytesPerUs = 0;   // bandwidth (1 byte/us = 1 MB/s)
  bool operator==(const LinkCost&) const = default;
};

struct LinkGraph {
  int nranks = 0;
  std::vector<std::string> classNames;
  std::vector<LinkCost> costs;        // per class
  std::vector<bool> intraHost;        // per class: links between ranks of one host
  std::vector<int> classOf;           // nranks * nranks; -1 on the diagonal
  double reduceBytesPerUs = 5000;     // local reduction rate (bytes of output per us)

  int classBetween(int a, int b) const { return classOf[static_cast<size_t>(a) * static_cast<size_t>(nranks) + static_cast<size_t>(b)]; }
  const LinkCost& costBetween(int a, int b) const { return costs[static_cast<size_t>(classBetween(a, b))]; }
  // Index of a class, adding it (with `cost`) when new.
  int addClass(const std::string& name, const LinkCost& cost, bool isIntraHost);

  std::vector<uint8_t> serialize() const;
  static bool deserialize(const uint8_t* data, size_t size, LinkGraph& out);
};

// One line of an HCL_LINK_MODEL file: a class pattern ("shm", "net:wan",
// "net:*", "*") and what it sets.
struct LinkModelRule {
  std::string pattern;
  LinkCost cost;
};

// Parses the file's text. Lines: "<pattern> <alpha> <bandwidth>", e.g.
// "net:wan 50us 125Mbit/s"; '#' starts a comment. On a bad line returns
// false with `error` naming the line.
bool parseLinkModel(std::string_view text, std::vector<LinkModelRule>& rules, std::string& error);

// Applies rules to the graph's classes: for each class, the last rule whose
// pattern matches wins (a trailing '*' matches any suffix).
void applyLinkModel(const std::vector<LinkModelRule>& rules, LinkGraph& graph);

// Time with unit ("2.5us", "1ms", "0.5s"; bare numbers are us) in us; <0 if bad.
double parseTimeUs(std::string_view text);
// Bandwidth with unit ("12.5GB/s", "125Mbit/s", "1gbit", "800MB/s"; bare
// numbers are MB/s) in bytes per us; <0 if bad.
double parseBandwidth(std::string_view text);

}  // namespace hcl
