// The identity of this host: HCL_HOSTID if set (to emulate several hosts on
// one machine), otherwise the hostname plus the kernel boot id.
#pragma once

#include <cstdint>
#include <string>

namespace hcl {

std::string hostIdentity();
// The kernel's boot id and this process's network namespace, whatever
// HCL_HOSTID says: processes that share it reach one another at any address
// either publishes. Empty where either cannot be read.
std::string networkStackIdentity();
std::string hostName();
// Random per process, fixed for its lifetime.
uint64_t processToken();

}  // namespace hcl
