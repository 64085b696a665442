// The CPUs each rank may run on, and whether the ranks of a host outnumber
// them. A rank that has a CPU of its own can busy-poll and take one round
// of n-1 messages; ranks that share CPUs must yield to each other, and then
// every extra peer a round waits for costs a trip through the scheduler.
#pragma once

#include <cstddef>
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

// Each rank's place in recursive doubling's pairing (order[rank]), chosen so
// that ranks pinned to the same CPUs meet only in the last rounds: the
// earlier rounds then pair ranks that run at once, and each CPU switches
// between its ranks about once per call. Empty (the ranks' own order) unless
// the ranks form equal groups of 2^j ranks per CPU mask, each group more
// ranks than its CPUs, on a power-of-two number of ranks.
std::vector<int> sharedCpuPairingOrder(const std::vector<PeerInfo>& peers);

// Where ranks share CPUs, messages on one host below this size are copied
// through the shared-memory FIFO, which the sender leaves at once, instead
// of the single copy, whose sender waits for a reader that may not be
// running; and the algorithms in which a rank reaches into a peer's buffer
// (a wait of the same kind) start here too (4 ranks on 2 cores: reduce and
// broadcast of 64-128 KiB 3-6x faster than with 64 KiB).
constexpr size_t kSharedCpusSingleCopyFrom = 256 * 1024;

}  // namespace hcl
