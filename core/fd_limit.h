// Room under RLIMIT_NOFILE for the descriptors a communicator's links hold.
// A job of many ranks opens one or more sockets per peer (TCP streams, the
// libfabric provider's connections, peer watches, verbs side connections),
// and the common soft limit of 1024 stops a job of a few hundred ranks at
// init with EMFILE, though the hard limit is usually far higher. As MPI
// launchers do, HCL raises the soft limit where its links need it.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"

namespace hcl {

// Descriptors this process has open now (entries of /proc/self/fd).
size_t openDescriptors();

// Makes room for `wanted` descriptors in all, for `forWhat` ("this
// communicator's links"): raises the soft limit (to twice `wanted`, at most
// the hard limit; never lowering it) where it is lower, and logs it. Where
// the hard limit is lower, raises the soft one to it and returns an error
// naming both; the caller warns and goes on, since the count is an
// estimate. HCL_RAISE_FD_LIMIT=0: does nothing.
Status ensureDescriptorRoom(int rank, size_t wanted, std::string_view forWhat);

}  // namespace hcl
