// Ranks of one process on one GPU share the process's hardware queues to it
// (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default; HIP's GPU_MAX_HW_QUEUES). A
// stream waiting for its rank's worker holds back whatever queue it shares,
// and if another rank's stream of the same call is behind it, both hang
// until the timeout (seen on an H100 with 1 and with 8 queues).
#pragma once

#include <string>
#include <vector>

#include "core/peer_info.h"

namespace hcl {

// The warning `rank` gives at init, or "" for none: only the lowest rank of
// such a pair warns, and a CUDA rank not when `cudaConnections` (the
// variable's value, may be null) is at least 32.
std::string sharedGpuWarning(const std::vector<PeerInfo>& peers, int rank, const char* cudaConnections);

}  // namespace hcl
