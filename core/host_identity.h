// The identity of this host: HCL_HOSTID if set (to emulate several hosts on
// one machine), otherwise the hostname plus the kernel boot id.
#pragma once

#include <cstdint>
#include <string>

namespace hcl {

std::string hostIdentity();
std::string hostName();
// Random per process, fixed for its lifetime.
uint64_t processToken();

}  // namespace hcl
