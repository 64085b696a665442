#include "core/bootstrap_wire.h"

#include <algorithm>
#include <cstring>

namespace hcl::bootwire {

void putU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void putU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint32_t getU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::array<uint8_t, kHelloBytes> encodeHello(const Hello& hello) {
  std::array<uint8_t, kHelloBytes> out{};
  std::copy(kHelloMagic.begin(), kHelloMagic.end(), out.begin());
  std::copy(hello.secret.begin(), hello.secret.end(), out.begin() + kMagicBytes);
  for (int i = 0; i < 4; ++i) {
    out[kSecretEnd + i] = static_cast<uint8_t>(static_cast<uint32_t>(hello.nranks) >> (8 * i));
    out[kSecretEnd + 4 + i] = static_cast<uint8_t>(static_cast<uint32_t>(hello.rank) >> (8 * i));
  }
  return out;
}

Hello decodeHello(std::span<const uint8_t, kHelloBytes> bytes) {
  Hello hello;
  std::memcpy(hello.secret.data(), bytes.data() + kMagicBytes, hello.secret.size());
  hello.nranks = static_cast<int32_t>(getU32(bytes.data() + kSecretEnd));
  hello.rank = static_cast<int32_t>(getU32(bytes.data() + kSecretEnd + 4));
  return hello;
}

void appendFrame(std::vector<uint8_t>& out, Kind kind, std::span<const uint8_t> payload) {
  putU32(out, static_cast<uint32_t>(kind));
  putU64(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
}

FrameHeader decodeFrameHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes) {
  return {static_cast<Kind>(getU32(bytes.data())), getU64(bytes.data() + 4)};
}

std::vector<uint8_t> encodeError(ErrorKind kind, std::string_view text) {
  std::vector<uint8_t> out;
  putU32(out, static_cast<uint32_t>(kind));
  text = text.substr(0, maxFrameBytesFromRoot(Kind::Error) - 4);
  out.insert(out.end(), text.begin(), text.end());
  return out;
}

bool decodeError(std::span<const uint8_t> payload, ErrorKind& kind, std::string& text) {
  if (payload.size() < 4) return false;
  kind = static_cast<ErrorKind>(getU32(payload.data()));
  text.assign(payload.begin() + 4, payload.end());
  return true;
}

bool decodeGather(std::span<const uint8_t> payload, std::vector<std::vector<uint8_t>>& all) {
  if (payload.size() < 4) return false;
  const uint32_t count = getU32(payload.data());
  if (count > (payload.size() - 4) / 8) return false;  // each entry has at least its length
  size_t pos = 4;
  all.clear();
  all.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (payload.size() - pos < 8) return false;
    const uint64_t len = getU64(payload.data() + pos);
    pos += 8;
    if (payload.size() - pos < len) return false;
    all.emplace_back(payload.begin() + pos, payload.begin() + pos + len);
    pos += len;
  }
  return pos == payload.size();
}

std::vector<uint8_t> encodeParts(const std::vector<std::vector<uint8_t>>& byRank) {
  size_t bytes = 4;
  uint32_t count = 0;
  for (const auto& part : byRank) {
    if (part.empty()) continue;
    bytes += 12 + part.size();
    ++count;
  }
  std::vector<uint8_t> out;
  out.reserve(bytes);
  putU32(out, count);
  for (size_t r = 0; r < byRank.size(); ++r) {
    if (byRank[r].empty()) continue;
    putU32(out, static_cast<uint32_t>(r));
    putU64(out, byRank[r].size());
    out.insert(out.end(), byRank[r].begin(), byRank[r].end());
  }
  return out;
}

bool decodeParts(std::span<const uint8_t> payload, size_t nranks, std::vector<PartView>& parts) {
  parts.clear();
  if (payload.size() < 4) return false;
  const uint32_t count = getU32(payload.data());
  if (count > nranks || count > (payload.size() - 4) / 12) return false;
  size_t pos = 4;
  for (uint32_t i = 0; i < count; ++i) {
    if (payload.size() - pos < 12) return false;
    const uint32_t rank = getU32(payload.data() + pos);
    const uint64_t len = getU64(payload.data() + pos + 4);
    pos += 12;
    if (rank >= nranks || (!parts.empty() && rank <= parts.back().rank) || payload.size() - pos < len) return false;
    parts.push_back({rank, payload.subspan(pos, static_cast<size_t>(len))});
    pos += static_cast<size_t>(len);
  }
  return pos == payload.size();
}

bool decodeParts(std::span<const uint8_t> payload, size_t nranks, std::vector<std::vector<uint8_t>>& byRank) {
  std::vector<PartView> parts;
  if (!decodeParts(payload, nranks, parts)) return false;
  byRank.assign(nranks, {});
  for (const PartView& p : parts) byRank[p.rank].assign(p.bytes.begin(), p.bytes.end());
  return true;
}

}  // namespace hcl::bootwire
