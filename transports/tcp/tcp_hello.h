// The first bytes a connecting rank sends on each of its sockets to a peer:
// proves it belongs to this communicator, says who it is, and which of how
// many streams of the pair this socket is. The connecting (lower) rank
// chooses the stream count; the accepting rank takes it from the hello, so
// both ends always agree. Anything else on a listener is dropped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transports/transport.h"

namespace hcl::tcp {

inline constexpr uint64_t kHelloMagic = 0x32504354'4C43480AULL;  // "\nHCLTCP2" little-endian
inline constexpr size_t kHelloBytes = 8 + 16 + 8 + 4 + 4 + 4 + 4;
using HelloBytes = std::array<uint8_t, kHelloBytes>;

struct Hello {
  uint64_t magic = kHelloMagic;
  std::array<uint8_t, 16> secret{};
  uint64_t commTag = 0;
  int32_t fromRank = -1;
  int32_t toRank = -1;
  int32_t streamIndex = 0;  // this socket's index among the pair's streams
  int32_t streamCount = 1;
};

Hello makeHello(const TransportContext& ctx, int toRank, int streamIndex = 0, int streamCount = 1);
HelloBytes encodeHello(const Hello& hello);
Hello decodeHello(const HelloBytes& raw);

// Why a hello does not belong to `ctx`'s communicator, is not addressed to
// ctx.rank or names an impossible stream; empty when it does. Rank and
// stream expectations are checked by the caller.
std::string helloMismatch(const Hello& hello, const TransportContext& ctx);

}  // namespace hcl::tcp
