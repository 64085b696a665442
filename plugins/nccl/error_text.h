// Error texts as an NCCL user should see them.
#pragma once

#include <string>
#include <string_view>

#include "nccl.h"

namespace hcl::nccl {

// Rewrites HCL's API identifiers in a message to their NCCL names
// ("hclAllReduce: ... hclDataType_t" -> "ncclAllReduce: ... ncclDataType_t").
// Only identifiers (hcl followed by an upper-case letter, at a word start)
// change; HCL_* parameter names and "HCL" itself stay.
std::string ncclWording(std::string_view text);

// The static text of a result code, pointing at NCCL_DEBUG (which HCL
// honours as an alias of HCL_DEBUG).
const char* resultString(ncclResult_t result);

}  // namespace hcl::nccl
