// Message framing on a TCP stream: a 16-byte little-endian header
// {tag u32, flags u32, bytes u64} followed by the payload. `bytes` is the
// whole message's size; a message striped over several streams sends one
// frame per piece, each with the piece's index and count in `flags` and only
// the piece's bytes as payload (tcp_stripe.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace hcl::tcp {

inline constexpr size_t kFrameHeaderBytes = 16;
using FrameHeaderBytes = std::array<uint8_t, kFrameHeaderBytes>;

struct FrameHeader {
  uint32_t tag = 0;
  uint32_t flags = 0;  // pieceFlags(): 0 for a message sent whole
  uint64_t bytes = 0;
};

FrameHeaderBytes encodeFrameHeader(const FrameHeader& header);
FrameHeader decodeFrameHeader(const FrameHeaderBytes& raw);

}  // namespace hcl::tcp
