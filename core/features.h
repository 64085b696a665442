// What this build of HCL contains (transports, device backends), for hcl-info
// and the VERSION log line.
#pragma once

#include <string>
#include <vector>

namespace hcl {

// One line per feature group, e.g. "transports: local, shm, tcp".
std::vector<std::string> hclBuildFeatures();

}  // namespace hcl
