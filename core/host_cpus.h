// The CPUs each rank may run on, and whether the ranks of a host outnumber
// them. A rank that has a CPU of its own can busy-poll and take one round
// of n-1 messages; ranks that share CPUs must yield to each other, and then
// every extra peer a round waits for costs a trip through the scheduler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/peer_info.h"

namespace hcl {

// This process's CPU affinity as a bit mask, 64 CPUs per word, with no
// trailing zero words (empty where the kernel does not say).
std::vector<uint64_t> currentCpuMask();

// More ranks on host `hostId` than distinct CPUs in the union of their
// masks. False where any of them published no mask.
bool hostOversubscribed(const std::vector<PeerInfo>& peers, const std::string& hostId);

// hostOversubscribed for any host of the communicator.
bool anyHostOversubscribed(const std::vector<PeerInfo>& peers);

}  // namespace hcl
