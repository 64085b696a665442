// All-reduce through shared windows: the direct algorithm for buffers that
// peers cannot map (malloc). Each rank's scratch is shareable, so peers map
// it: a rank stages its input for each peer's shard in its window, each
// owner reduces its shard slice reading the peers' windows and leaves the
// result in its own window, and every rank copies the results into its
// output. Two empty messages per slice and peer order the windows' reuse.
// Per slice a rank copies its data twice (stage in, copy out) in user space
// with every store that is not read again bypassing the cache, where the
// kernel's process_vm_readv/writev would also pin every page.
//
// When every buffer of the call is shareable (hclMemAlloc), the same
// schedule runs the direct algorithm's steps instead (Only::Shared).
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule windowAllReduce(const CollArgs& args);

}  // namespace hcl
