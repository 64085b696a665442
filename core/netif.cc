#include "core/netif.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <utility>

#include "core/log.h"
#include "core/nic.h"
#include "core/params.h"

namespace hcl {
namespace {

int prefixLength(const sockaddr* mask) {
  if (mask == nullptr) return 0;
  int bits = 0;
  if (mask->sa_family == AF_INET) {
    const auto* m = reinterpret_cast<const sockaddr_in*>(mask);
    bits = std::popcount(static_cast<uint32_t>(m->sin_addr.s_addr));
  } else if (mask->sa_family == AF_INET6) {
    const auto* m = reinterpret_cast<const sockaddr_in6*>(mask);
    for (uint8_t byte : m->sin6_addr.s6_addr) bits += std::popcount(byte);
  }
  return bits;
}

bool isLinkLocalV6(const sockaddr_in6* a) { return IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr); }

std::string numericAddress(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  const void* src = sa->sa_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  if (inet_ntop(sa->sa_family, src, buf, sizeof(buf)) == nullptr) return {};
  return buf;
}

// Splits "a,b,c" into its non-empty items.
std::vector<std::string_view> splitList(std::string_view list) {
  std::vector<std::string_view> items;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (!item.empty()) items.push_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return items;
}

// "AF_INET" / "AF_INET6" (also "inet", "ipv4", "4", ...); 0 means any.
int familyFromText(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t.empty()) return 0;
  if (t == "af_inet" || t == "inet" || t == "ipv4" || t == "4") return AF_INET;
  if (t == "af_inet6" || t == "inet6" || t == "ipv6" || t == "6") return AF_INET6;
  log::warn(log::Net, "HCL_SOCKET_FAMILY={} is not AF_INET or AF_INET6; ignoring it", text);
  return 0;
}

bool isDefaultExcluded(const NetInterface& itf) {
  return itf.loopback || itf.name.starts_with("docker") || itf.name.starts_with("virbr");
}

}  // namespace

std::vector<NetInterface> listInterfaces() {
  std::vector<NetInterface> result;
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) {
    log::warn(log::Net, "getifaddrs failed: {}", std::strerror(errno));
    return result;
  }
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> list(raw, &freeifaddrs);
  for (const ifaddrs* ifa = raw; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 && isLinkLocalV6(reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr))) continue;
    NetInterface itf;
    itf.name = ifa->ifa_name;
    itf.ip = numericAddress(ifa->ifa_addr);
    if (itf.ip.empty()) continue;
    itf.family = family;
    itf.prefixLen = prefixLength(ifa->ifa_netmask);
    itf.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    result.push_back(std::move(itf));
  }
  return result;
}

bool interfaceMatches(std::string_view spec, std::string_view name) {
  if (spec.empty()) return true;
  bool exclude = false;
  if (spec.front() == '^') {
    exclude = true;
    spec.remove_prefix(1);
  }
  bool exact = false;
  if (!spec.empty() && spec.front() == '=') {
    exact = true;
    spec.remove_prefix(1);
  }
  bool listed = false;
  for (std::string_view item : splitList(spec)) {
    if (exact ? name == item : name.starts_with(item)) {
      listed = true;
      break;
    }
  }
  return exclude ? !listed : listed;
}

namespace {

// A per-interface spec none of whose names is an interface of this host
// applies to nothing here: most likely a typo. (One name missing is normal
// when one value serves hosts with different interfaces.)
void warnIfSpecNamesNoInterface(const char* name, const std::string& spec) {
  const std::vector<std::string> named = specInterfaceNames(spec);
  if (named.empty()) return;
  const std::vector<NetInterface> all = listInterfaces();
  const auto exists = [&](const std::string& ifname) {
    return std::any_of(all.begin(), all.end(), [&](const NetInterface& itf) { return itf.name == ifname; });
  };
  if (std::none_of(named.begin(), named.end(), exists)) {
    std::vector<std::string> names;
    for (const NetInterface& itf : all) {
      if (std::find(names.begin(), names.end(), itf.name) == names.end()) names.push_back(itf.name);
    }
    std::string here;
    for (const std::string& n : names) here += (here.empty() ? "" : ",") + n;
    log::warn(log::Env, "{}='{}' names no interface of this host (it has {}); it applies to none", name, spec, here);
  }
}

std::vector<NetInterface> withNicFacts(std::vector<NetInterface> interfaces) {
  // A bad spec is ignored where it does not parse, as NCCL ignores bad
  // variables, but never silently.
  for (const auto& [name, rates] : {std::pair{"HCL_FABRIC", false}, std::pair{"HCL_NIC_SPEED", true}}) {
    const std::string spec = paramString(name);
    const std::string problem = nicSpecProblem(name, spec, rates);
    if (!problem.empty()) log::warn(log::Env, "{}; ignoring what does not parse", problem);
    warnIfSpecNamesNoInterface(name, spec);
  }
  for (NetInterface& itf : interfaces) {
    NicFacts facts = describeNic(itf.name, itf.ip, itf.prefixLen, itf.loopback);
    itf.kind = facts.kind;
    itf.speedMbps = facts.speedMbps;
    itf.fabric = std::move(facts.fabric);
  }
  return interfaces;
}

std::vector<NetInterface> chooseInterfacesWithoutFacts() {
  const std::string spec = paramString("HCL_SOCKET_IFNAME");
  const int family = familyFromText(paramString("HCL_SOCKET_FAMILY"));
  std::vector<NetInterface> all = listInterfaces();
  std::erase_if(all, [&](const NetInterface& itf) { return family != 0 && itf.family != family; });

  std::vector<NetInterface> chosen;
  if (!spec.empty()) {
    for (const auto& itf : all)
      if (interfaceMatches(spec, itf.name)) chosen.push_back(itf);
    if (chosen.empty()) log::warn(log::Net, "no interface matches HCL_SOCKET_IFNAME={}", spec);
    return chosen;
  }
  for (const auto& itf : all)
    if (!isDefaultExcluded(itf)) chosen.push_back(itf);
  if (chosen.empty()) {
    for (const auto& itf : all)
      if (itf.loopback) chosen.push_back(itf);
  }
  return chosen;
}

}  // namespace

std::vector<NetInterface> chooseInterfaces() { return withNicFacts(chooseInterfacesWithoutFacts()); }

bool parseHostPort(std::string_view text, std::string& ip, uint16_t& port, std::string* why) {
  auto fail = [why](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  constexpr const char* kShape = "not host:port (or [ipv6]:port)";
  std::string_view host;
  std::string_view portText;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return fail(kShape);
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail(kShape);
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return fail("an IPv6 address needs brackets: [ipv6]:port");
  }
  if (host.empty() || portText.empty()) return fail(kShape);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), value);
  if (ec != std::errc() || end != portText.data() + portText.size() || value == 0 || value > 65535)
    return fail(fmt::format("port '{}' is not a number from 1 to 65535", portText));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string hostStr(host);
  if (const int rc = getaddrinfo(hostStr.c_str(), nullptr, &hints, &res); rc != 0 || res == nullptr) {
    return fail(fmt::format("host '{}' does not resolve ({})", hostStr, rc != 0 ? gai_strerror(rc) : "no address"));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
  std::string numeric;
  for (const addrinfo* ai = res; ai != nullptr && numeric.empty(); ai = ai->ai_next) {
    if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6) numeric = numericAddress(ai->ai_addr);
  }
  if (numeric.empty()) return fail(fmt::format("host '{}' has no IPv4 or IPv6 address", hostStr));
  ip = std::move(numeric);
  port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace hcl
