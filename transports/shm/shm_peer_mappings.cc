#include "transports/shm/shm_peer_mappings.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace hcl::shm {
namespace {

// Peers' buffers change rarely (training loops reuse theirs); a few mapped
// allocations cover them, and dropping the oldest bounds what a peer's freed
// memory can keep alive here.
constexpr size_t kMaxRegions = 16;

}  // namespace

PeerMappings::~PeerMappings() {
  for (const Region& r : regions_) ::munmap(r.local, r.bytes);
  if (pidfd_ >= 0) ::close(pidfd_);
}

void PeerMappings::disable(const char* call, int err) {
  disabled_ = true;
  log::info(log::Shm, "rank {}: cannot map rank {}'s memory ({} failed: {}); using process_vm_readv", rank_, peer_,
            call, std::strerror(err));
}

const PeerMappings::Region* PeerMappings::open(const PeerBuffer& buffer) {
  if (pidfd_ < 0) {
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(peerPid_), 0));
    if (pidfd_ < 0) {
      disable("pidfd_open", errno);
      return nullptr;
    }
  }
  const int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd_, static_cast<int>(buffer.allocFd), 0));
  if (fd < 0) {
    const int err = errno;
    // Not allowed at all: stop trying. A bad descriptor concerns only this buffer.
    if (err == EPERM || err == ENOSYS || err == ESRCH) disable("pidfd_getfd", err);
    return nullptr;
  }
  struct stat st {};
  void* local = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    // Populated at once: the first collective on the buffer then takes no page faults.
    local = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  }
  ::close(fd);
  if (local == MAP_FAILED) return nullptr;
  if (regions_.size() == kMaxRegions) {
    ::munmap(regions_.front().local, regions_.front().bytes);
    regions_.erase(regions_.begin());
  }
  regions_.push_back({buffer.allocSerial, buffer.allocBase, static_cast<uint64_t>(st.st_size),
                      static_cast<std::byte*>(local)});
  log::trace(log::Shm, "rank {}: mapped rank {}'s allocation {} ({} bytes)", rank_, peer_, buffer.allocSerial,
             st.st_size);
  return &regions_.back();
}

void* PeerMappings::map(const PeerBuffer& buffer, uint64_t address, size_t bytes) {
  if (buffer.allocSerial == 0 || buffer.allocFd < 0 || disabled_) return nullptr;
  auto it = std::find_if(regions_.begin(), regions_.end(),
                         [&](const Region& r) { return r.serial == buffer.allocSerial; });
  const Region* r = nullptr;
  if (it != regions_.end()) {
    // Most recently used last: the oldest is what open() drops.
    std::rotate(it, it + 1, regions_.end());
    r = &regions_.back();
  } else {
    r = open(buffer);
  }
  if (r == nullptr || address < r->peerBase || address - r->peerBase + bytes > r->bytes) return nullptr;
  return r->local + (address - r->peerBase);
}

}  // namespace hcl::shm
