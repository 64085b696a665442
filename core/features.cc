#include "core/features.h"

namespace hcl {

std::vector<std::string> hclBuildFeatures() {
  return {
      "transports: local, shm, tcp, ofi (libfabric)",
      "devices: cpu",
  };
}

}  // namespace hcl
