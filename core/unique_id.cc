// hclUniqueId layout (128 bytes, the rest zero):
//   [0, 8)   magic "HCLUID01"
//   [8, 24)  secret
//   [24]     flags (bit 0: the root is started by rank 0)
//   [25]     IP version, 4 or 6
//   [26, 28) root port, big-endian
//   [28, 44) root IP, raw bytes (IPv4 uses the first 4)
#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <string_view>

#include <asio.hpp>
#include <fmt/format.h>

#include "core/bootstrap.h"
#include "core/bootstrap_root.h"
#include "core/netif.h"
#include "core/params.h"

namespace hcl {
namespace {

constexpr std::array<char, 8> kMagic = {'H', 'C', 'L', 'U', 'I', 'D', '0', '1'};
constexpr size_t kSecretAt = 8;
constexpr size_t kFlagsAt = 24;
constexpr size_t kVersionAt = 25;
constexpr size_t kPortAt = 26;
constexpr size_t kIpAt = 28;
constexpr uint8_t kFlagRootByRank0 = 1;
static_assert(kIpAt + 16 <= HCL_UNIQUE_ID_BYTES);

uint64_t fnv1a(std::string_view data, uint64_t hash) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Every process given the same HCL_COMM_ID (and HCL_COMM_SECRET) derives the
// same secret; it tells communicators apart, it is not a cryptographic key.
void deriveSecret(std::string_view commId, std::string_view extra, uint8_t (&secret)[16]) {
  std::string material = fmt::format("hcl-comm-id\x1f{}\x1f{}", commId, extra);
  const uint64_t lo = splitmix(fnv1a(material, 0xcbf29ce484222325ull));
  const uint64_t hi = splitmix(fnv1a(material, lo ^ 0x6a09e667f3bcc908ull));
  for (int i = 0; i < 8; ++i) {
    secret[i] = static_cast<uint8_t>(lo >> (8 * i));
    secret[8 + i] = static_cast<uint8_t>(hi >> (8 * i));
  }
}

void randomSecret(uint8_t (&secret)[16]) {
  std::random_device rd;
  for (size_t i = 0; i < sizeof(secret); i += 4) {
    const uint32_t r = rd();
    std::memcpy(secret + i, &r, 4);
  }
}

}  // namespace

void encodeUniqueId(const UniqueIdContents& in, hclUniqueId* out) {
  auto* bytes = reinterpret_cast<uint8_t*>(out->internal);
  std::memset(bytes, 0, HCL_UNIQUE_ID_BYTES);
  std::memcpy(bytes, kMagic.data(), kMagic.size());
  std::memcpy(bytes + kSecretAt, in.secret, sizeof(in.secret));
  bytes[kFlagsAt] = in.rootStartedByRank0 ? kFlagRootByRank0 : 0;
  bytes[kPortAt] = static_cast<uint8_t>(in.rootPort >> 8);
  bytes[kPortAt + 1] = static_cast<uint8_t>(in.rootPort & 0xff);
  std::error_code ec;
  const auto ip = asio::ip::make_address(in.rootIp, ec);
  if (ec) return;  // version 0: decode reports the id as corrupt
  if (ip.is_v4()) {
    const auto raw = ip.to_v4().to_bytes();
    bytes[kVersionAt] = 4;
    std::copy(raw.begin(), raw.end(), bytes + kIpAt);
  } else {
    const auto raw = ip.to_v6().to_bytes();
    bytes[kVersionAt] = 6;
    std::copy(raw.begin(), raw.end(), bytes + kIpAt);
  }
}

Status decodeUniqueId(const hclUniqueId& in, UniqueIdContents& out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(in.internal);
  if (std::memcmp(bytes, kMagic.data(), kMagic.size()) != 0)
    return invalidArgument("hclUniqueId is not an HCL id (bad magic)");
  UniqueIdContents c;
  std::memcpy(c.secret, bytes + kSecretAt, sizeof(c.secret));
  c.rootStartedByRank0 = (bytes[kFlagsAt] & kFlagRootByRank0) != 0;
  c.rootPort = static_cast<uint16_t>((bytes[kPortAt] << 8) | bytes[kPortAt + 1]);
  const uint8_t version = bytes[kVersionAt];
  if (version == 4) {
    asio::ip::address_v4::bytes_type raw;
    std::copy(bytes + kIpAt, bytes + kIpAt + raw.size(), raw.begin());
    c.rootIp = asio::ip::address_v4(raw).to_string();
  } else if (version == 6) {
    asio::ip::address_v6::bytes_type raw;
    std::copy(bytes + kIpAt, bytes + kIpAt + raw.size(), raw.begin());
    c.rootIp = asio::ip::address_v6(raw).to_string();
  } else {
    return invalidArgument(fmt::format("hclUniqueId is corrupt (IP version {})", version));
  }
  if (c.rootPort == 0) return invalidArgument("hclUniqueId is corrupt (root port 0)");
  out = std::move(c);
  return Status::success();
}

Status createUniqueId(hclUniqueId* out) {
  if (out == nullptr) return invalidArgument("uniqueId is NULL");
  UniqueIdContents contents;
  const ParamValue commId = resolveParam("HCL_COMM_ID");
  if (!commId.text.empty()) {
    const char* variable = commId.source == ParamSource::NcclEnv ? "NCCL_COMM_ID" : "HCL_COMM_ID";
    std::string why;
    if (!parseHostPort(commId.text, contents.rootIp, contents.rootPort, &why))
      return invalidArgument(fmt::format("{}={}: {}", variable, commId.text, why));
    deriveSecret(commId.text, paramString("HCL_COMM_SECRET"), contents.secret);
    contents.rootStartedByRank0 = true;
    encodeUniqueId(contents, out);
    return Status::success();
  }

  const std::vector<NetInterface> interfaces = chooseInterfaces();
  if (interfaces.empty())
    return systemError(fmt::format("no usable network interface for the bootstrap root (HCL_SOCKET_IFNAME={})",
                                   paramString("HCL_SOCKET_IFNAME")));
  const NetInterface& itf = interfaces.front();
  std::error_code ec;
  const auto ip = asio::ip::make_address(itf.ip, ec);
  if (ec) return internalError(fmt::format("interface {} has an unparsable address {}", itf.name, itf.ip));
  randomSecret(contents.secret);
  bootwire::Secret secret;
  std::copy(std::begin(contents.secret), std::end(contents.secret), secret.begin());
  HCL_TRY(startBootstrapRoot(ip, 0, secret, &contents.rootPort));
  contents.rootIp = itf.ip;
  contents.rootStartedByRank0 = false;
  encodeUniqueId(contents, out);
  return Status::success();
}

}  // namespace hcl
