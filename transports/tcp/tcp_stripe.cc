#include "transports/tcp/tcp_stripe.h"

#include <algorithm>

namespace hcl::tcp {

int directionStreamCount(int streams, bool fromLower) {
  if (streams <= 1) return 1;
  return fromLower ? (streams + 1) / 2 : streams / 2;
}

int directionStream(int streams, bool fromLower, int i) {
  if (streams <= 1) return 0;
  return 2 * i + (fromLower ? 0 : 1);
}

int pieceCount(size_t bytes, int directionStreams) {
  const size_t byLength = bytes / kMinPieceBytes;
  const size_t most = static_cast<size_t>(std::max(1, directionStreams));
  return static_cast<int>(std::clamp<size_t>(byLength, 1, most));
}

Piece pieceOf(size_t bytes, int pieces, int index) {
  if (pieces <= 1) return {0, bytes};
  const size_t share = bytes / static_cast<size_t>(pieces) / kPieceAlign * kPieceAlign;
  const size_t offset = share * static_cast<size_t>(index);
  return {offset, index == pieces - 1 ? bytes - offset : share};
}

uint32_t pieceFlags(int index, int pieces) {
  if (pieces <= 1) return 0;
  return static_cast<uint32_t>(index) | static_cast<uint32_t>(pieces - 1) << 16;
}

int pieceIndexOf(uint32_t flags) { return static_cast<int>(flags & 0xffffu); }

int pieceCountOf(uint32_t flags) { return static_cast<int>(flags >> 16) + 1; }

}  // namespace hcl::tcp
