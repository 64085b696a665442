// Whether a call's results should be stored through the cache or past it,
// by the call's size and the CPU family: results that the next call still
// finds in cache are worth caching; past that, streaming stores save the
// read for ownership and leave the cache to the inputs. Both the executor's
// fused sums and the window all-reduce's schedule ask.
#pragma once

#include <cstddef>

#include "core/cpu_family.h"

namespace hcl {

// Which results of a fused sum bypass the cache: this rank's own, and the
// copy it stores for a peer (or, in the window all-reduce, into its output).
enum class SumStores { Cached, PeerStreamed, BothStreamed };

// What pays for a call of `callBytes` on `nranks` ranks of one host;
// `sharedCpus`: some host has more ranks than CPUs for them.
SumStores sumStoresFor(size_t callBytes, int nranks, CpuFamily family, bool sharedCpus);

}  // namespace hcl
