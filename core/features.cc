#include "core/features.h"

namespace hcl {

std::vector<std::string> hclBuildFeatures() {
  return {
      "transports: local, shm, tcp, ofi (libfabric), net-plugin (NCCL net plugins), ib (verbs: InfiniBand, RoCE)",
      "devices: cpu",
  };
}

}  // namespace hcl
