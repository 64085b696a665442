#include "core/store_policy.h"

#include <algorithm>

namespace hcl {
namespace {

// AMD EPYC (Zen 4, 1 MiB L2 per core, 32 MiB L3), 2 ranks, hclMemAlloc
// buffers, the bench's time per call: both cached is 1.4-2x faster than
// either streaming up to 4 MiB; streaming the peer's copy alone is 1.4-1.5x
// faster than the others at 8 MiB; from 16 MiB, where the call's buffers on
// the host fill the L3, streaming both is 10-18% ahead of the peer's alone
// and 1.2-1.4x ahead of both cached. 4 ranks on 2 cores, whose pairs share
// each core's cache: the direct algorithm's fused sums were level (within
// 6%) at every size from 1 to 32 MiB; the window all-reduce's results, with
// 256-307 KiB slices, pay past the cache from 2 MiB per call (8 MiB on the
// host), 0.73-0.85x the time of cached ones at 2-4 MiB, and cached ones pay
// at 1 MiB (0.77x the time).
SumStores amdSumStores(size_t callBytes, size_t hostBytes, bool sharedCpus) {
  constexpr size_t kCachedUpTo = 4u << 20;
  constexpr size_t kStreamBothFromHostBytes = 32u << 20;
  constexpr size_t kStreamBothFromHostBytesSharedCpus = 8u << 20;
  if (hostBytes >= (sharedCpus ? kStreamBothFromHostBytesSharedCpus : kStreamBothFromHostBytes))
    return SumStores::BothStreamed;
  if (callBytes <= kCachedUpTo) return SumStores::Cached;
  return SumStores::PeerStreamed;
}

}  // namespace

SumStores sumStoresFor(size_t callBytes, int nranks, CpuFamily family, bool sharedCpus) {
  const size_t hostBytes = callBytes * static_cast<size_t>(std::max(nranks, 1));
  if (family == CpuFamily::Amd) return amdSumStores(callBytes, hostBytes, sharedCpus);
  // Intel Xeon, 2 ranks, hclMemAlloc buffers, the bench's time per call
  // against both results streamed: both cached is 1.4-2.2x faster up to 1 MiB, where
  // everything stays in the cores' caches; streaming only the peer's copy is
  // 8-10% faster from 3 to 32 MiB, where the host's large last-level cache
  // still holds our own; from 64 MiB (all outputs 128 MiB) streaming both is
  // 35% faster. At 2 MiB, where the inputs alone fill a core's 2 MiB L2,
  // streaming both was 8% ahead (at 1.5 and 3 MiB, level and 8% behind).
  constexpr size_t kCachedUpTo = 1u << 20;
  constexpr size_t kStreamBothFrom = 2u << 20;
  constexpr size_t kStreamPeerFrom = 3u << 20;
  constexpr size_t kStreamBothFromHostBytes = 128u << 20;
  if (hostBytes >= kStreamBothFromHostBytes) return SumStores::BothStreamed;
  if (callBytes <= kCachedUpTo) return SumStores::Cached;
  if (callBytes >= kStreamBothFrom && callBytes < kStreamPeerFrom) return SumStores::BothStreamed;
  return SumStores::PeerStreamed;
}


}  // namespace hcl
