#include "core/fd_limit.h"

#include <fcntl.h>
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

size_t openDescriptorsByAsking() {
  rlimit limit{};
  constexpr rlim_t kMostAsked = 1 << 16;
  const rlim_t asked = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 ? std::min(limit.rlim_cur, kMostAsked) : kMostAsked;
  size_t n = 0;
  for (rlim_t fd = 0; fd < asked; ++fd) n += ::fcntl(static_cast<int>(fd), F_GETFD) != -1 ? 1 : 0;
  return n;
}

size_t openDescriptors() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec);
  if (ec) return openDescriptorsByAsking();
  size_t n = 0;
  for (std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) ++n;
  // The directory's own descriptor was open while it was read.
  return n > 0 ? n - 1 : 0;
}

namespace {

// Ranks of one process may initialise at once: one must not lower what
// another raised, and each counts what the others claimed.
struct Claims {
  std::mutex mutex;
  size_t claimed = 0;
};

Claims& claims() {
  static Claims c;
  return c;
}

}  // namespace

DescriptorClaim::~DescriptorClaim() {
  if (count_ == 0) return;
  const std::lock_guard lock(claims().mutex);
  claims().claimed -= count_;
}

DescriptorClaim& DescriptorClaim::operator=(DescriptorClaim&& other) noexcept {
  if (this != &other) {
    DescriptorClaim dropped(std::move(*this));
    count_ = std::exchange(other.count_, 0);
  }
  return *this;
}

Status ensureDescriptorRoom(int rank, size_t coming, std::string_view forWhat, DescriptorClaim& claim,
                            size_t shared) {
  claim = DescriptorClaim();
  // Counted under the lock: a setup that opens its links and then lets go
  // of its claim meanwhile would otherwise be counted nowhere.
  const std::lock_guard lock(claims().mutex);
  const size_t wanted = openDescriptors() + claims().claimed + coming + shared;
  claims().claimed += coming;
  claim.count_ = coming;
  if (!paramBool("HCL_RAISE_FD_LIMIT")) return {};
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
