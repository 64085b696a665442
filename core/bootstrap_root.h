// The bootstrap root: a server thread that admits the ranks of one
// communicator and then serves allgather rounds until every rank has left.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>

#include "core/bootstrap_wire.h"
#include "core/status.h"

namespace hcl {

// Starts a root listening on ip:port (port 0: an ephemeral port) and hands it
// to the process-wide registry that stops and joins roots at exit. The join
// phase is bounded by HCL_TIMEOUT_MS from the first rank's arrival.
// On failure `addressInUse` (if given) tells whether bind saw EADDRINUSE.
Status startBootstrapRoot(const asio::ip::address& ip, uint16_t port, const bootwire::Secret& secret,
                          uint16_t* boundPort, bool* addressInUse = nullptr);

// Stops this process's root of that port and secret, if it runs one: for
// an id no rank will join, or a join that failed. Returns once the root has
// sent what it had queued (at most a couple of seconds). True if there was one.
bool stopBootstrapRoot(uint16_t port, const bootwire::Secret& secret);

// Whether a root of this process listening (or having listened) on `port` is
// still running; for tests and diagnostics.
bool bootstrapRootRunning(uint16_t port);

// Waits until every root this process started has finished (each does once
// every rank of its communicator has left), at most `limit`. For programs
// that leave with _exit, which runs no destructor: a root still sending the
// last replies of a round would be cut off with them (test harnesses).
void waitForBootstrapRoots(std::chrono::milliseconds limit);

}  // namespace hcl
