// The blobs transports leave in prepare() for each peer's connect(), packed
// into one part per peer for the alltoall between the two phases.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transports/transport.h"

namespace hcl {

// What this rank sends `peer`: each transport's non-empty preparedFor(peer), with its kind.
std::vector<uint8_t> packPreparedBlobs(const std::vector<std::unique_ptr<Transport>>& transports, int peer);

// What `kind` on rank `rank` left for this rank (from ctx.prepared); empty
// when nothing, or when the part is malformed.
std::vector<uint8_t> preparedBlobOf(const TransportContext& ctx, int rank, TransportKind kind);

}  // namespace hcl
