// How a connection spreads messages over its streams (sockets). Both ends
// derive the same layout from the stream count (agreed in the hello), the
// direction of the message and its size, so pieces are matched without any
// extra bytes on the wire.
//
// One stream carries both directions. With two or more, each direction has
// its own: the lower rank sends on the even-numbered streams, the higher rank
// on the odd-numbered ones (a socket that carries data one way only never
// has its sender and its reader contend for it). A message of at least
// 2 x kMinPieceBytes is cut into up to as many pieces as its direction has
// streams, piece i on the direction's i-th stream; smaller ones go whole on
// the direction's first stream. Every stream keeps FIFO order, and so does
// the connection: the k-th message's pieces are the k-th (or later) frames of
// their streams on both ends.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcl::tcp {

inline constexpr size_t kMinPieceBytes = size_t{64} << 10;
inline constexpr size_t kPieceAlign = 4096;  // piece boundaries, for aligned copies
inline constexpr int kMaxStreams = 64;

// Streams carrying the direction that starts at the lower rank
// (`fromLower`) or at the higher one.
int directionStreamCount(int streams, bool fromLower);
// The index, among all `streams`, of the direction's i-th stream.
int directionStream(int streams, bool fromLower, int i);

// Pieces a message of `bytes` is cut into over `directionStreams` streams:
// one per kMinPieceBytes, at least one, at most directionStreams.
int pieceCount(size_t bytes, int directionStreams);

struct Piece {
  size_t offset = 0;
  size_t bytes = 0;
};
// Piece `index` of `pieces`: all but the last are equal and kPieceAlign
// aligned; the last takes the rest.
Piece pieceOf(size_t bytes, int pieces, int index);

// The frame header's flags word: piece index and count, 0 for a whole message
// (so single-stream traffic is framed exactly as before striping existed).
uint32_t pieceFlags(int index, int pieces);
int pieceIndexOf(uint32_t flags);
int pieceCountOf(uint32_t flags);

}  // namespace hcl::tcp
