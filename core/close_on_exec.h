// Descriptors HCL opens must not outlive this process in a child that
// another thread of the program starts with fork and exec: a link kept open
// there would hide this rank's death from its peers until their timeout.
// Sockets made by asio (and accept()) lack the flag, so it is set after.
#pragma once

#include <fcntl.h>

namespace hcl {

inline void setCloseOnExec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace hcl
