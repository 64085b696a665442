// The blobs transports leave in prepare() for their peers' connect(), packed
// into one contribution per rank for the barrier between the two phases.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transports/transport.h"

namespace hcl {

// This rank's contribution: each transport's non-empty preparedBlob(), with its kind.
std::vector<uint8_t> packPreparedBlobs(const std::vector<std::unique_ptr<Transport>>& transports);

// What `kind` left on rank `rank` (from ctx.prepared); empty when nothing,
// or when the contribution is malformed.
std::vector<uint8_t> preparedBlobOf(const TransportContext& ctx, int rank, TransportKind kind);

}  // namespace hcl
