// All-gather and all-to-all through shared windows: the direct algorithms
// for buffers that peers cannot map (malloc). A rank stages its blocks,
// slice by slice, in its own scratch, which its peers map and copy from in
// user space; the kernel's process_vm_readv would copy once but pin every
// page it reads, and at these sizes two plain copies take less time.
// Slices alternate between two regions, so a rank stages slice g+1 while
// its peers still read slice g; two empty messages per slice and peer order
// the regions' reuse.
//
// Like the window all-reduce (window.h), the schedule also holds the direct
// algorithm's steps (Only::Direct), which run when every buffer of the call
// is shareable (hclMemAlloc) or where a rank finds them faster for calls of
// this shape (core/staging_choice.h).
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"

namespace hcl {

Schedule windowAllGather(const CollArgs& args);
// In place, the peers would read our blocks while we overwrite them: the
// direct all-to-all (direct_access.h), which gathers into scratch first.
Schedule windowAlltoAll(const CollArgs& args);

}  // namespace hcl
