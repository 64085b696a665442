// Accepting ncclConfig_t from every NCCL version since configs exist (2.14).
//
// Fields were only ever appended. A caller built against an older header
// passes a smaller struct whose `size` says how many bytes are its own and
// whose `version` says which fields it knew; a caller built against a newer
// header passes a larger struct whose extra fields HCL does not know.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"
#include "hcl.h"
#include "nccl.h"

namespace hcl::nccl {

struct ConfigTranslation {
  hclConfig_t config;       // starts as HCL_CONFIG_INITIALIZER
  size_t ignoredBytes = 0;  // bytes of fields newer than NCCL 2.28 that were skipped
};

// Reads the caller's config into an hclConfig_t: the bytes the caller owns
// (by `size`), then fields its `version` predates go back to undefined, as
// NCCL does (older structs may have padding where newer fields live).
// A wrong magic or a struct too small to hold `blocking` is invalid.
Status translateConfig(const ncclConfig_t* in, ConfigTranslation& out);

}  // namespace hcl::nccl
