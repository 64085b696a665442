#include "core/nic.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/params.h"
#include "core/rate.h"

namespace hcl {
namespace {

constexpr int kArphrdInfiniband = 32;

std::string readSysfs(const std::string& path) {
  std::ifstream in(path);
  std::string value;
  std::getline(in, value);
  return value;
}

bool sysfsExists(const std::string& path) { return std::ifstream(path).good(); }

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> splitItems(std::string_view list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string item = trim(list.substr(start, end - start));
    if (!item.empty()) items.push_back(std::move(item));
    start = end + 1;
  }
  return items;
}

// One item of a "value" or "ifname=value,..." spec.
struct SpecItem {
  bool named = false;  // has an '='
  std::string ifname, value;
};

SpecItem parseItem(std::string_view item) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) return {false, "", std::string(item)};
  return {true, trim(item.substr(0, eq)), trim(item.substr(eq + 1))};
}

// The value a "value" or "ifname=value,..." spec gives `ifname`, or "".
// In a per-interface spec (any item names one) an item without a name is an
// error that nicSpecProblem reports; it applies to no interface.
std::string valueFor(std::string_view spec, std::string_view ifname) {
  const std::vector<std::string> texts = splitItems(spec);
  const bool perInterface =
      std::any_of(texts.begin(), texts.end(), [](const std::string& t) { return parseItem(t).named; });
  for (const std::string& text : texts) {
    const SpecItem item = parseItem(text);
    if (perInterface ? item.ifname == ifname : !item.named) return item.value;
  }
  return {};
}

NicKind kindFromSysfs(std::string_view ifname, bool loopback) {
  if (loopback) return NicKind::Loopback;
  const std::string base = fmt::format("/sys/class/net/{}/", ifname);
  int type = 0;
  const std::string typeText = readSysfs(base + "type");
  std::from_chars(typeText.data(), typeText.data() + typeText.size(), type);
  if (type == kArphrdInfiniband) return NicKind::IpoIb;
  // An Ethernet netdev backed by an RDMA device is a RoCE port.
  if (sysfsExists(base + "device/infiniband") || !readSysfs(base + "device/infiniband_verbs").empty())
    return NicKind::Roce;
  return NicKind::Ethernet;
}

uint32_t speedFromSysfs(std::string_view ifname) {
  const std::string text = readSysfs(fmt::format("/sys/class/net/{}/speed", ifname));
  long speed = 0;
  std::from_chars(text.data(), text.data() + text.size(), speed);
  return speed > 0 ? static_cast<uint32_t>(speed) : 0;
}

}  // namespace

std::string fabricFromSpec(std::string_view spec, std::string_view ifname) { return valueFor(spec, ifname); }

uint32_t parseRateMbps(std::string_view text) {
  const auto bytesPerSecond = parseRateBytesPerSecond(text, RateUnit::Bits);
  if (!bytesPerSecond) return 0;
  const double mbps = *bytesPerSecond * 8 / 1e6;
  if (mbps < 1 || mbps > std::numeric_limits<uint32_t>::max()) return 0;
  return static_cast<uint32_t>(mbps + 0.5);
}

std::vector<std::string> specInterfaceNames(std::string_view spec) {
  std::vector<std::string> names;
  for (const std::string& text : splitItems(spec)) {
    const SpecItem item = parseItem(text);
    if (item.named && !item.ifname.empty()) names.push_back(item.ifname);
  }
  return names;
}

std::string nicSpecProblem(std::string_view name, std::string_view spec, bool rates) {
  const std::vector<std::string> texts = splitItems(spec);
  const bool perInterface =
      std::any_of(texts.begin(), texts.end(), [](const std::string& t) { return parseItem(t).named; });
  for (const std::string& text : texts) {
    const SpecItem item = parseItem(text);
    if (perInterface && item.ifname.empty()) {
      return fmt::format("{}='{}': item '{}' has no interface name (use 'ifname=value' for every item, or one value alone)",
                         name, spec, text);
    }
    if (item.value.empty()) return fmt::format("{}='{}': item '{}' has no value", name, spec, text);
    if (rates && parseRateMbps(item.value) == 0) {
      return fmt::format("{}='{}': '{}' is not a rate (a number of Mbit/s, or with a unit: 125mbit, 1gbit, 200g)",
                         name, spec, item.value);
    }
  }
  if (!perInterface && texts.size() > 1) {
    return fmt::format("{}='{}': several values without interface names (use 'ifname=value,...')", name, spec);
  }
  return {};
}

uint32_t speedFromSpec(std::string_view spec, std::string_view ifname) {
  const std::string value = valueFor(spec, ifname);
  return value.empty() ? 0 : parseRateMbps(value);
}

std::string subnetLabel(std::string_view ip, int prefixLen) {
  std::array<uint8_t, 16> bytes{};
  const std::string text(ip);
  int family = AF_INET;
  size_t len = 4;
  if (inet_pton(AF_INET, text.c_str(), bytes.data()) != 1) {
    if (inet_pton(AF_INET6, text.c_str(), bytes.data()) != 1) return "";
    family = AF_INET6;
    len = 16;
  }
  const int bits = std::clamp(prefixLen, 0, static_cast<int>(len * 8));
  for (size_t i = 0; i < len; ++i) {
    const int keep = std::clamp(bits - static_cast<int>(i * 8), 0, 8);
    bytes[i] &= static_cast<uint8_t>(0xff00 >> keep);
  }
  char out[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, bytes.data(), out, sizeof out);
  return fmt::format("ip:{}/{}", out, bits);
}

std::string ibSubnetLabel(std::string_view hardwareAddress) {
  // 4 bytes of queue pair flags, then the 16-byte port GID whose first 8
  // bytes are the subnet prefix.
  std::vector<std::string> bytes;
  size_t start = 0;
  while (start <= hardwareAddress.size()) {
    size_t end = hardwareAddress.find(':', start);
    if (end == std::string_view::npos) end = hardwareAddress.size();
    bytes.emplace_back(hardwareAddress.substr(start, end - start));
    start = end + 1;
  }
  if (bytes.size() != 20) return "";
  std::string label = "ib:";
  for (size_t i = 4; i < 12; i += 2) {
    if (bytes[i].size() != 2 || bytes[i + 1].size() != 2) return "";
    label += bytes[i] + bytes[i + 1] + (i < 10 ? ":" : "");
  }
  return label;
}

NicFacts describeNic(std::string_view ifname, std::string_view ip, int prefixLen, bool loopback) {
  NicFacts facts;
  facts.kind = kindFromSysfs(ifname, loopback);
  facts.speedMbps = speedFromSpec(paramString("HCL_NIC_SPEED"), ifname);
  if (facts.speedMbps == 0) facts.speedMbps = speedFromSysfs(ifname);
  facts.fabric = fabricFromSpec(paramString("HCL_FABRIC"), ifname);
  if (facts.fabric.empty() && facts.kind == NicKind::IpoIb)
    facts.fabric = ibSubnetLabel(readSysfs(fmt::format("/sys/class/net/{}/address", ifname)));
  if (facts.fabric.empty()) facts.fabric = subnetLabel(ip, prefixLen);
  return facts;
}

}  // namespace hcl
