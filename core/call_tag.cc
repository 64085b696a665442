#include "core/call_tag.h"

namespace hcl {
namespace {

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint32_t callTagSalt(uint64_t serial, const PendingOp& op) {
  uint64_t h = mix(serial);
  h = mix(h ^ op.count);
  h = mix(h ^ (static_cast<uint64_t>(op.kind) | static_cast<uint64_t>(op.type) << 8 |
               static_cast<uint64_t>(op.spec.kind) << 16 | static_cast<uint64_t>(static_cast<uint32_t>(op.root)) << 32));
  return static_cast<uint32_t>(h) & 0xFFFFFF00u;
}

}  // namespace hcl
