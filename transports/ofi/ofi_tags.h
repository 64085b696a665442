// The 64-bit libfabric tags of HCL's messages:
//   bits 0-31   the sender's count of pieces sent to the receiver
//   bit 32      a control message: a sender's notice that it aborted
//   bits 33-63  the sender's rank
// Receives match exactly (no ignore bits: libfabric 1.17's shm provider lost
// messages under them), on sender and count, so they need no directed
// receives, and the k-th piece sent matches the k-th piece received
// whatever order the provider completes them in.
//
// The 4 bytes of remote completion data carry HCL's own tag, with its top
// bit flipped on a message's last piece: ends that cut a message into a
// different number of pieces fail on the first piece they disagree on
// instead of shifting by a piece.
#pragma once

#include <bit>
#include <cstdint>

namespace hcl::ofi::tags {

inline constexpr uint64_t kSequenceMask = 0xffffffffull;
inline constexpr uint64_t kControlBit = uint64_t{1} << 32;
inline constexpr int kRankShift = 33;
inline constexpr uint32_t kLastPieceFlip = 0x80000000u;

constexpr uint64_t piece(int sender, uint32_t sequence) {
  return (static_cast<uint64_t>(sender) << kRankShift) | sequence;
}
constexpr uint64_t abortNotice(int sender) { return (static_cast<uint64_t>(sender) << kRankShift) | kControlBit; }
constexpr int senderOf(uint64_t tag) { return static_cast<int>(tag >> kRankShift); }
constexpr bool isControl(uint64_t tag) { return (tag & kControlBit) != 0; }

// What a piece's completion data carries.
constexpr uint32_t pieceData(uint32_t hclTag, bool last) { return last ? hclTag ^ kLastPieceFlip : hclTag; }

// The tag bits a provider matches on: its mem_tag_format's leading zero
// bits are ignored (fi_endpoint(3)); 0 leaves all 64.
constexpr int usableTagBits(uint64_t memTagFormat) {
  return memTagFormat == 0 ? 64 : 64 - std::countl_zero(memTagFormat);
}

// Whether ranks 0..nranks-1 fit the provider's tags.
constexpr bool fits(int nranks, uint64_t memTagFormat) {
  const int rankBits = nranks <= 1 ? 1 : std::bit_width(static_cast<unsigned>(nranks - 1));
  return kRankShift + rankBits <= usableTagBits(memTagFormat);
}

}  // namespace hcl::ofi::tags
