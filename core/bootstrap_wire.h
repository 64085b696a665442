// The bootstrap wire protocol between ranks and the root. All integers are
// little-endian. A connection starts with a fixed-size hello; after that both
// sides exchange frames {u32 kind, u64 length, payload}.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcl::bootwire {

using Secret = std::array<uint8_t, 16>;

inline constexpr std::array<uint8_t, 8> kHelloMagic = {'H', 'C', 'L', 'B', 'O', 'O', 'T', '1'};
inline constexpr size_t kMagicBytes = kHelloMagic.size();
inline constexpr size_t kSecretEnd = kMagicBytes + sizeof(Secret);
inline constexpr size_t kHelloBytes = kSecretEnd + 4 + 4;  // + nranks, rank
inline constexpr size_t kFrameHeaderBytes = 4 + 8;
// Rejects corrupt headers before allocating; far above any real bootstrap blob.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 34;
// The most of a leaving rank's reason a bye carries.
inline constexpr size_t kMaxByeReasonBytes = 2048;

// The most ranks a communicator may have: the root sizes its tables by a
// joining rank's claim, so a bad one must not make it allocate gigabytes.
inline constexpr int kMaxRanks = 1 << 20;

enum class Kind : uint32_t {
  Blob = 1,    // rank -> root: this round's contribution
  Bye = 2,     // rank -> root: leaving; payload empty, or why it gave up (text)
  Route = 3,   // rank -> root: this round's parts for other ranks (encodeParts, by destination)
  JoinOk = 10, // root -> rank: every rank joined; payload u32 nranks
  Gather = 11, // root -> rank: u32 count, then per rank {u64 length, bytes}
  Error = 12,  // root -> rank: u32 ErrorKind, then text
  Parts = 13,  // root -> rank: what the others sent it in a Route round (encodeParts, by source)
};

enum class ErrorKind : uint32_t {
  Fatal = 0,
  // The root is finishing an earlier communicator; connect again.
  Retry = 1,
};

// The most a frame of this kind from the root may hold: a round's result
// can be large, the root's other messages are small.
constexpr uint64_t maxFrameBytesFromRoot(Kind kind) {
  switch (kind) {
    case Kind::Gather:
    case Kind::Parts: return kMaxFrameBytes;
    case Kind::JoinOk: return 4;
    case Kind::Error: return 64 * 1024;
    default: return 0;
  }
}

struct Hello {
  Secret secret{};
  int32_t nranks = 0;
  int32_t rank = 0;
};

struct FrameHeader {
  Kind kind{};
  uint64_t length = 0;
};

void putU32(std::vector<uint8_t>& out, uint32_t v);
void putU64(std::vector<uint8_t>& out, uint64_t v);
uint32_t getU32(const uint8_t* p);
uint64_t getU64(const uint8_t* p);

std::array<uint8_t, kHelloBytes> encodeHello(const Hello& hello);
// Only meaningful once magic and secret were checked.
Hello decodeHello(std::span<const uint8_t, kHelloBytes> bytes);

void appendFrame(std::vector<uint8_t>& out, Kind kind, std::span<const uint8_t> payload);
FrameHeader decodeFrameHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes);

std::vector<uint8_t> encodeError(ErrorKind kind, std::string_view text);
bool decodeError(std::span<const uint8_t> payload, ErrorKind& kind, std::string& text);

bool decodeGather(std::span<const uint8_t> payload, std::vector<std::vector<uint8_t>>& all);

// Parts addressed by rank, only the non-empty ones: u32 count, then per part
// {u32 rank, u64 length, bytes}, ranks rising.
std::vector<uint8_t> encodeParts(const std::vector<std::vector<uint8_t>>& byRank);
struct PartView {
  uint32_t rank;
  std::span<const uint8_t> bytes;
};
// False when malformed: a rank not below nranks, ranks not rising, or lengths past the end.
bool decodeParts(std::span<const uint8_t> payload, size_t nranks, std::vector<PartView>& parts);
bool decodeParts(std::span<const uint8_t> payload, size_t nranks, std::vector<std::vector<uint8_t>>& byRank);

}  // namespace hcl::bootwire
