// Small TCP connections beside a transport's own (verbs links are set up
// over one; peer watches listen for a process's end on one): non-blocking,
// close-on-exec sockets with keepalive. `where` names the link in error
// texts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace hcl::side {

// A listener on every address (dual-stack where the host has IPv6).
// `what` names it in error texts ("verbs listen").
Status openListener(const std::string& what, int* fd, uint16_t* port);
// A connection that is not there yet leaves *fd >= 0 and *connected false.
// family: 4 or 6; ip: 4 or 16 bytes.
Status startConnect(int family, const uint8_t* ip, uint16_t port, const std::string& where, int* fd,
                    bool* connected);
// The same to a numeric address ("10.0.0.2", "fe80::1%eth0" without the scope).
Status startConnect(const std::string& ip, uint16_t port, const std::string& where, int* fd, bool* connected);
// Whether a connection started above is up yet; an error if it failed.
Status checkConnect(int fd, const std::string& where, bool* connected);
// The next connection waiting, or -1 (none yet, or one that broke before
// it was taken).
Status accept(int listenFd, const std::string& where, int* fd);
// Moves bytes [*done, size) without blocking; an error once the peer is gone.
Status sendSome(int fd, const uint8_t* data, size_t size, size_t* done, const std::string& where);
Status receiveSome(int fd, uint8_t* data, size_t size, size_t* done, const std::string& where);
// Reads what has arrived of the peer's closing record into [*got, size)
// without blocking. True once the record is whole, or the peer closed its
// end without one, or the connection broke.
bool peerClosing(int fd, uint8_t* record, size_t size, size_t* got);

}  // namespace hcl::side
