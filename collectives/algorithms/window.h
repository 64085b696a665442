// All-reduce through shared windows: the direct algorithm for buffers that
// peers cannot map (malloc). Each rank's scratch is shareable, so peers map
// it: a rank stages its input for each peer's shard in its window, each
// owner reduces its shard slice reading the peers' windows and leaves the
// result in its own window, and every rank copies the results into its
// output. Two empty messages per slice and peer order the windows' reuse.
// Per slice a rank copies its data twice (stage in, copy out) in user space,
// where the kernel's process_vm_readv/writev would also pin every page;
// results that are not read again before they leave the cache bypass it.
//
// The same schedule also holds the direct algorithm's steps, straight
// between the peers' buffers (Only::Direct): those run when every buffer of
// the call is shareable (hclMemAlloc), and on malloc buffers when a rank
// finds them faster for calls of this shape. That happens where stores into
// lines another core has read are slow (ranks on different core complexes,
// or a virtual machine whose CPUs the host moves apart), which staging pays
// for on every line.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule windowAllReduce(const CollArgs& args);

}  // namespace hcl
