// What HCL_IB asks for: off, auto (verbs where the host has an active
// port) or on (an error without one).
#pragma once

#include "core/status.h"

namespace hcl::ib {

enum class IbMode { Off, Auto, On };

// HCL_IB, with HCL_IB_DISABLE (NCCL_IB_DISABLE) turning it off and a verbs
// library named under HCL's name (HCL_IBVERBS_LIBRARY) turning auto into on.
Status readIbMode(IbMode& mode);

}  // namespace hcl::ib
