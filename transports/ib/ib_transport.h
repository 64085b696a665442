// HCL's verbs transport (InfiniBand, RoCE): the net plugin transport's
// setup and connections over HCL's own verbs network (ib_net.h). Links
// that would leave over TCP or libfabric take it where both ranks opened
// verbs ports on one fabric (HCL_IB).
#pragma once

#include <memory>
#include <string>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeIbTransport();
// For hcl-info: whether verbs ports can be used here, and which.
std::string describeIbSupport();

}  // namespace hcl
