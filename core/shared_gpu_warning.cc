#include "core/shared_gpu_warning.h"

#include <fmt/format.h>

#include <cstdlib>

namespace hcl {

std::string sharedGpuWarning(const std::vector<PeerInfo>& peers, int rank, const char* cudaConnections) {
  const PeerInfo& self = peers[static_cast<size_t>(rank)];
  if (self.deviceKind != DeviceKind::Cuda && self.deviceKind != DeviceKind::Hip) return "";
  const bool cuda = self.deviceKind == DeviceKind::Cuda;
  if (cuda && cudaConnections && std::atoi(cudaConnections) >= 32) return "";
  for (const PeerInfo& p : peers) {
    if (p.rank == rank || p.processToken != self.processToken || p.deviceKind != self.deviceKind ||
        p.deviceIndex != self.deviceIndex) {
      continue;
    }
    if (p.rank < rank) return "";
    return fmt::format(
        "ranks {} and {} of this process share {}:{}: their streams share the process's hardware queues to it, "
        "where one rank's stream waiting for HCL can hold back the other's and hang both; run the ranks as "
        "processes{}",
        rank, p.rank, self.vendor, self.deviceIndex,
        cuda ? ", or set CUDA_DEVICE_MAX_CONNECTIONS=32 before the first CUDA call" : "");
  }
  return "";
}

}  // namespace hcl
