// Room under RLIMIT_NOFILE for the descriptors a communicator's links hold.
// A job of many ranks opens one or more sockets per peer (TCP streams, the
// libfabric provider's connections, peer watches, verbs side connections),
// and the common soft limit of 1024 stops a job of a few hundred ranks at
// init with EMFILE, though the hard limit is usually far higher. As MPI
// launchers do, HCL raises the soft limit where its links need it.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include "core/status.h"

namespace hcl {

// Descriptors this process has open now (entries of /proc/self/fd; without
// /proc, openDescriptorsByAsking()).
size_t openDescriptors();
// The numbers below the soft limit (at most 65536 of them) that are open.
size_t openDescriptorsByAsking();

// Descriptors a setup in this process is about to open: until the claim
// is destroyed (by then they are open, and counted from /proc) every other
// setup's room counts them too, so that ranks of one process initialising
// at once (one process driving a host's GPUs) do not each make room for
// their own links only.
class DescriptorClaim {
 public:
  DescriptorClaim() = default;
  ~DescriptorClaim();
  DescriptorClaim(DescriptorClaim&& other) noexcept : count_(std::exchange(other.count_, 0)) {}
  DescriptorClaim& operator=(DescriptorClaim&& other) noexcept;
  DescriptorClaim(const DescriptorClaim&) = delete;
  DescriptorClaim& operator=(const DescriptorClaim&) = delete;

 private:
  friend Status ensureDescriptorRoom(int, size_t, std::string_view, DescriptorClaim&, size_t);
  size_t count_ = 0;
};

// Makes room for `coming` more descriptors, for `forWhat` ("this
// communicator's links"), beside those open now and those other setups of
// this process claimed, and claims them in `claim`. Raises the soft limit
// (to twice the total, at most the hard limit; never lowering it) where it
// is lower, and logs it. Where the hard limit is lower, raises the soft one
// to it and returns an error naming both; the caller warns and goes on,
// since the count is an estimate. `shared`: descriptors that something the
// setups share is about to open (a bootstrap root in this process),
// counted but not claimed, since each setup that shares it counts them.
// HCL_RAISE_FD_LIMIT=0: claims and nothing else.
Status ensureDescriptorRoom(int rank, size_t coming, std::string_view forWhat, DescriptorClaim& claim,
                            size_t shared = 0);

}  // namespace hcl
