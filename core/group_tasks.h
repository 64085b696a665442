// A launch's operations as the executor's tasks: one task per communicator,
// its point-to-point calls first (posted together), then its collectives in
// call order. Also how each collective runs: the IPC path, the host-staged
// pipeline, or a schedule on host buffers.
#pragma once

#include <memory>
#include <vector>

#include "core/executor.h"
#include "core/group.h"

namespace hcl {

CollArgs collArgsFor(Communicator& comm, const PendingOp& op);

// Whether a collective takes the same-vendor IPC path. Every rank decides
// alike: from the communicator and the call's shared arguments.
bool takesIpcPath(const Communicator& comm, const PendingOp& op);

// The run of one collective (not a send/recv) into `out`.
Status makeCollectiveRun(Communicator& comm, const PendingOp& op, RunSlot& out);

std::vector<std::unique_ptr<CommTask>> buildTasks(std::vector<PendingOp>& ops);

}  // namespace hcl
