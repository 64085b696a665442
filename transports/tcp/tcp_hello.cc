#include "transports/tcp/tcp_hello.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "transports/tcp/tcp_stripe.h"
#include "core/wire_order.h"

namespace hcl::tcp {

Hello makeHello(const TransportContext& ctx, int toRank, int streamIndex, int streamCount) {
  Hello hello;
  std::copy(std::begin(ctx.secret), std::end(ctx.secret), hello.secret.begin());
  hello.commTag = ctx.commTag;
  hello.fromRank = ctx.rank;
  hello.toRank = toRank;
  hello.streamIndex = streamIndex;
  hello.streamCount = streamCount;
  return hello;
}

HelloBytes encodeHello(const Hello& hello) {
  HelloBytes raw{};
  uint8_t* p = raw.data();
  storeLittleEndian(p, hello.magic);
  std::memcpy(p + 8, hello.secret.data(), hello.secret.size());
  storeLittleEndian(p + 24, hello.commTag);
  storeLittleEndian(p + 32, static_cast<uint32_t>(hello.fromRank));
  storeLittleEndian(p + 36, static_cast<uint32_t>(hello.toRank));
  storeLittleEndian(p + 40, static_cast<uint32_t>(hello.streamIndex));
  storeLittleEndian(p + 44, static_cast<uint32_t>(hello.streamCount));
  return raw;
}

Hello decodeHello(const HelloBytes& raw) {
  const uint8_t* p = raw.data();
  Hello hello;
  hello.magic = loadLittleEndian<uint64_t>(p);
  std::memcpy(hello.secret.data(), p + 8, hello.secret.size());
  hello.commTag = loadLittleEndian<uint64_t>(p + 24);
  hello.fromRank = static_cast<int32_t>(loadLittleEndian<uint32_t>(p + 32));
  hello.toRank = static_cast<int32_t>(loadLittleEndian<uint32_t>(p + 36));
  hello.streamIndex = static_cast<int32_t>(loadLittleEndian<uint32_t>(p + 40));
  hello.streamCount = static_cast<int32_t>(loadLittleEndian<uint32_t>(p + 44));
  return hello;
}

std::string helloMismatch(const Hello& hello, const TransportContext& ctx) {
  if (hello.magic != kHelloMagic) return fmt::format("bad magic {:#018x}", hello.magic);
  if (!std::equal(hello.secret.begin(), hello.secret.end(), std::begin(ctx.secret)))
    return "wrong secret";
  if (hello.commTag != ctx.commTag)
    return fmt::format("communicator tag {:#x}, expected {:#x}", hello.commTag, ctx.commTag);
  if (hello.toRank != ctx.rank)
    return fmt::format("addressed to rank {}, this is rank {}", hello.toRank, ctx.rank);
  if (hello.streamCount < 1 || hello.streamCount > kMaxStreams || hello.streamIndex < 0 ||
      hello.streamIndex >= hello.streamCount)
    return fmt::format("stream {} of {}", hello.streamIndex, hello.streamCount);
  return {};
}

}  // namespace hcl::tcp
