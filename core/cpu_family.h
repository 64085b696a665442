// The CPU family of the host, for sizes at which an algorithm or a way of
// storing starts to pay that were measured to differ between families.
#pragma once

#include <cstdint>

namespace hcl {

enum class CpuFamily : uint8_t { Other, Amd };
const char* toString(CpuFamily f);

// This host's family. Peer access, and with it every choice that depends on
// the family, comes only with one host, so every rank that asks gets the
// same answer.
CpuFamily hostCpuFamily();

}  // namespace hcl
