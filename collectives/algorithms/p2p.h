// The point-to-point calls of one group on one communicator, as a schedule:
// every transfer is posted before any is waited for, so any pattern (ring
// shifts, all-to-all, both sides sending first) completes. Sends to and
// receives from self are matched in order and become copies.
#pragma once

#include <vector>

#include "collectives/plan/schedule.h"

namespace hcl {

struct P2PCall {
  bool isSend = true;
  int peer = 0;
  size_t bytes = 0;
  uint32_t buffer = 0;  // index into the task's user buffer table
};

// Whether the sends to self and receives from self among `calls` pair up,
// in order and of equal sizes; if not, `error` says how.
bool selfExchangesPair(const std::vector<P2PCall>& calls, int rank, std::string& error);

// Fails (returns false, with `error` set) when self sends and receives do
// not pair up.
bool p2pSchedule(const std::vector<P2PCall>& calls, int rank, Schedule& out, std::string& error);

}  // namespace hcl
