// The frame a rank writes to a TCP peer just before it resets the link for a
// failure (Connection::abortBecause), so that the peer can name the cause:
// "rank 0: rank 3 (tcp ...) aborted, failing: rank 3: connection to rank 2
// ... closed by peer". It is an ordinary frame header whose tag and flags
// no message has (no piece layout has flags with the top bit set), followed
// by the text. It is written only where the stream is between frames, so it
// lands where the peer reads a header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "transports/tcp/tcp_frame.h"

namespace hcl::tcp {

inline constexpr uint32_t kAbortNoticeTag = 0xab0a7ed0u;
inline constexpr uint32_t kAbortNoticeFlags = 0x80000000u;

bool isAbortNotice(const FrameHeader& header);

// Header and text, the text cut to kMostAbortReasonBytes (abort_reason.h).
std::vector<uint8_t> encodeAbortNotice(std::string_view why);

// Where `bytes` (what the peer sent from a frame boundary on) starts with
// whole frames followed by a notice, the notice's text (as much of it as
// `bytes` holds); nullopt when a message's frame does not fit or something
// other than frames and a notice is there.
std::optional<std::string> findAbortNotice(std::span<const uint8_t> bytes);

// What a rank reports when a peer's notice reached it.
Status peerAbortedWith(int rank, int peer, const std::string& description, const std::string& why);

}  // namespace hcl::tcp
