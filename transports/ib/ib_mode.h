// What HCL_IB asks for: off, auto (verbs where the host has an active
// port) or on (an error without one).
#pragma once

#include <string>

#include "core/status.h"
#include "transports/net_request.h"

namespace hcl::ib {

enum class IbMode { Off, Auto, On };

// HCL_IB, with HCL_IB_DISABLE (NCCL_IB_DISABLE) turning it off and a verbs
// library named under HCL's name (HCL_IBVERBS_LIBRARY) turning auto into
// on; HCL_NET (NCCL_NET) naming IB turns auto into on, and naming another
// network turns verbs off. `askedBy`: what turned it on, for messages.
Status readIbMode(IbMode& mode, std::string* askedBy, const NetRequest& net);
// With HCL_NET's request.
Status readIbMode(IbMode& mode, std::string* askedBy = nullptr);

}  // namespace hcl::ib
