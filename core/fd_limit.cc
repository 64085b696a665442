#include "core/fd_limit.h"

#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "core/log.h"
#include "core/params.h"

namespace hcl {

size_t openDescriptors() {
  std::error_code ec;
  size_t n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++n;
  return n;
}

Status ensureDescriptorRoom(int rank, size_t wanted, std::string_view forWhat) {
  if (!paramBool("HCL_RAISE_FD_LIMIT")) return {};
  // Ranks of one process may initialise at once: one must not lower what
  // another raised.
  static std::mutex mutex;
  const std::lock_guard lock(mutex);
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  if (limit.rlim_cur == RLIM_INFINITY || wanted <= limit.rlim_cur) return {};
  const rlim_t old = limit.rlim_cur;
  const bool hardTooLow = limit.rlim_max != RLIM_INFINITY && wanted > limit.rlim_max;
  const rlim_t doubled = static_cast<rlim_t>(wanted) * 2;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY ? doubled : std::min(limit.rlim_max, doubled);
  if (limit.rlim_cur > old && ::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return systemError(fmt::format("rank {}: raising the file descriptor limit from {} to {} for {} (about {} in "
                                   "all) failed: {}",
                                   rank, old, limit.rlim_cur, forWhat, wanted, std::strerror(errno)));
  }
  if (hardTooLow) {
    return systemError(fmt::format(
        "rank {}: about {} file descriptors are needed in all, for {}: more than the process may open (hard limit "
        "{}, soft limit {}, raised from {}); raise the hard limit (ulimit -Hn, LimitNOFILE=), or use fewer per "
        "peer (HCL_PEER_WATCH=0, HCL_TCP_STREAMS=1)",
        rank, wanted, forWhat, limit.rlim_max, limit.rlim_cur, old));
  }
  log::info(log::Init, "rank {}: raised the soft file descriptor limit from {} to {} (hard limit {}): about {} are "
            "needed in all, for {}", rank, old, limit.rlim_cur, limit.rlim_max, wanted, forWhat);
  return {};
}

}  // namespace hcl
