// The first bytes a connecting rank sends: proves it belongs to this
// communicator and says who it is. Anything else on a listener is dropped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transports/transport.h"

namespace hcl::tcp {

inline constexpr uint64_t kHelloMagic = 0x31504354'4C43480AULL;  // "\nHCLTCP1" little-endian
inline constexpr size_t kHelloBytes = 8 + 16 + 8 + 4 + 4;
using HelloBytes = std::array<uint8_t, kHelloBytes>;

struct Hello {
  uint64_t magic = kHelloMagic;
  std::array<uint8_t, 16> secret{};
  uint64_t commTag = 0;
  int32_t fromRank = -1;
  int32_t toRank = -1;
};

Hello makeHello(const TransportContext& ctx, int toRank);
HelloBytes encodeHello(const Hello& hello);
Hello decodeHello(const HelloBytes& raw);

// Why a hello does not belong to `ctx`'s communicator or is not addressed to
// ctx.rank; empty when it does. Rank expectations are checked by the caller.
std::string helloMismatch(const Hello& hello, const TransportContext& ctx);

}  // namespace hcl::tcp
