#include "transports/tcp/tcp_abort_notice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "transports/abort_reason.h"
#include "transports/tcp/tcp_stripe.h"

namespace hcl::tcp {

bool isAbortNotice(const FrameHeader& header) {
  return header.tag == kAbortNoticeTag && header.flags == kAbortNoticeFlags && header.bytes <= kMostAbortReasonBytes;
}

std::vector<uint8_t> encodeAbortNotice(std::string_view why) {
  const std::string text = shortenedAbortReason(why);
  const FrameHeaderBytes header = encodeFrameHeader({kAbortNoticeTag, kAbortNoticeFlags, text.size()});
  std::vector<uint8_t> frame(kFrameHeaderBytes + text.size());
  std::memcpy(frame.data(), header.data(), kFrameHeaderBytes);
  std::memcpy(frame.data() + kFrameHeaderBytes, text.data(), text.size());
  return frame;
}

std::optional<std::string> findAbortNotice(std::span<const uint8_t> bytes) {
  size_t at = 0;
  while (bytes.size() - at >= kFrameHeaderBytes) {
    FrameHeaderBytes raw;
    std::memcpy(raw.data(), bytes.data() + at, kFrameHeaderBytes);
    const FrameHeader header = decodeFrameHeader(raw);
    at += kFrameHeaderBytes;
    if (isAbortNotice(header)) {
      const size_t have = std::min<size_t>(header.bytes, bytes.size() - at);
      return std::string(reinterpret_cast<const char*>(bytes.data() + at), have);
    }
    // A message's frame, or one piece of a striped message (whose header
    // gives the whole message's size).
    size_t payload = header.bytes;
    if (header.flags != 0) {
      const int pieces = pieceCountOf(header.flags);
      const int index = pieceIndexOf(header.flags);
      if (pieces < 2 || pieces > kMaxStreams || index >= pieces) return std::nullopt;
      payload = pieceOf(header.bytes, pieces, index).bytes;
    }
    if (payload > bytes.size() - at) return std::nullopt;
    at += payload;
  }
  return std::nullopt;
}

Status peerAbortedWith(int rank, int peer, const std::string& description, const std::string& why) {
  return remoteError(fmt::format("rank {}: rank {} ({}) aborted{}", rank, peer, description,
                                 why.empty() ? "" : ", failing: " + why));
}

}  // namespace hcl::tcp
