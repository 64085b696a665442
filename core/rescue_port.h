// A TCP port a rank holds, without listening on it, for a bootstrap root of
// its own: if the communicator fails, its links are gone, and the survivors
// meet again at the root that the first of them starts on this port.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace hcl {

class RescuePort {
 public:
  RescuePort() = default;
  ~RescuePort() { release(); }
  RescuePort(RescuePort&& other) noexcept;
  RescuePort& operator=(RescuePort&& other) noexcept;
  RescuePort(const RescuePort&) = delete;
  RescuePort& operator=(const RescuePort&) = delete;

  // Binds an ephemeral port on `ip` (numeric, v4 or v6).
  Status open(const std::string& ip);
  uint16_t port() const { return port_; }
  // Frees the port so that a root can listen on it.
  void release();

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace hcl
