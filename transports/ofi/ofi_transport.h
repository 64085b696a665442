// libfabric transport: one tagged RDM endpoint per communicator
// (ofi_endpoint.h), on the provider HCL_OFI / HCL_OFI_PROVIDER choose
// (ofi_request.h). A rank publishes its endpoint's provider, fabric and
// address; two ranks on one provider and fabric are linked over it.
#pragma once

#include <memory>
#include <string>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeOfiTransport();
// For hcl-info: whether this build has the transport, and whether
// libfabric.so.1 opens here.
std::string describeOfiSupport();

}  // namespace hcl
