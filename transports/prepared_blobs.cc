#include "transports/prepared_blobs.h"

#include "core/wire.h"

namespace hcl {

std::vector<uint8_t> packPreparedBlobs(const std::vector<std::unique_ptr<Transport>>& transports, int peer) {
  WireWriter w;
  bool any = false;
  for (const auto& t : transports) {
    std::vector<uint8_t> blob = t->preparedFor(peer);
    if (blob.empty()) continue;
    w.put(static_cast<uint8_t>(t->kind()));
    w.putBytes(blob);
    any = true;
  }
  return any ? w.take() : std::vector<uint8_t>{};
}

std::vector<uint8_t> preparedBlobOf(const TransportContext& ctx, int rank, TransportKind kind) {
  if (!ctx.prepared || rank < 0 || static_cast<size_t>(rank) >= ctx.prepared->size()) return {};
  const std::vector<uint8_t>& packed = (*ctx.prepared)[static_cast<size_t>(rank)];
  WireReader r(packed.data(), packed.size());
  while (!r.atEnd()) {
    uint8_t k = 0;
    std::vector<uint8_t> blob;
    if (!r.get(k) || !r.getBytes(blob)) return {};
    if (k == static_cast<uint8_t>(kind)) return blob;
  }
  return {};
}

}  // namespace hcl
