// For unit tests that drive two ends of a transport by hand.
#pragma once

#include <chrono>
#include <vector>

#include "core/status.h"
#include "transports/transport.h"

namespace hcl::testing {

// Calls `step` (one progress call on every end, returning the first
// failure) until every transfer is done, a step fails, or 20 s pass.
template <typename Step>
Status pumpTransfers(Step&& step, const std::vector<Transfer*>& transfers) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    if (Status s = step(); !s.ok()) return s;
    bool all = true;
    for (const Transfer* t : transfers) all = all && t->done();
    if (all) return {};
  }
  return internalError("transfers still pending after 20 s");
}

inline void describeTransfer(Transfer& t, bool isSend, void* buffer, size_t bytes, uint32_t tag) {
  t.isSend = isSend;
  t.buffer = buffer;
  t.bytes = bytes;
  t.tag = tag;
}

}  // namespace hcl::testing
