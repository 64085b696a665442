// The text an abort for a failure passes to a peer (Connection::abortBecause),
// so that a rank that learns of the failure from that abort can name its
// cause. Each hop quotes the one before it, so the first cause is at the end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hcl {

constexpr size_t kMostAbortReasonBytes = 1024;

// At most `most` bytes of `why`: its start (which call failed on which rank)
// and its end (the first cause) around " ... ".
inline std::string shortenedAbortReason(std::string_view why, size_t most = kMostAbortReasonBytes) {
  constexpr std::string_view kGap = " ... ";
  if (why.size() <= most) return std::string(why);
  if (most <= kGap.size()) return std::string(why.substr(0, most));
  const size_t head = (most - kGap.size()) / 2;
  const size_t tail = most - kGap.size() - head;
  std::string out(why.substr(0, head));
  out += kGap;
  out += why.substr(why.size() - tail);
  return out;
}

}  // namespace hcl
