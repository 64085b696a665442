// The upper 24 bits of a collective call's message tags (the low 8 hold the
// collective's kind): a hash of what every rank must pass alike, and of the
// call's place among the communicator's collectives. Ranks that disagree on
// the count, data type, root or operator, or that are a call apart (one
// left a message unread), then fail at the first message they exchange
// instead of pairing messages of different calls: the transports compare
// tags on every message.
#pragma once

#include <cstdint>

#include "core/group.h"

namespace hcl {

// `serial`: the call's number among the communicator's collectives, which
// every rank counts alike (send and receive calls are not counted: each
// rank issues its own).
uint32_t callTagSalt(uint64_t serial, const PendingOp& op);

}  // namespace hcl
