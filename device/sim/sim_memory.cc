#include "device/sim/sim_memory.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace hcl::sim {
namespace {

constexpr uint32_t kHandleMagic = 0x4853494D;  // "HSIM"

// What the sim puts in a DeviceIpcHandle.
struct HandleBody {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  int32_t pad;
  uint64_t bytes;
  uint64_t serial;
};
static_assert(sizeof(HandleBody) <= sizeof(DeviceIpcHandle::bytes));

size_t mappedSize(size_t bytes) { return bytes == 0 ? 1 : bytes; }

}  // namespace

void transfer(void* dst, bool dstDevice, const void* src, bool srcDevice, size_t bytes) {
  if (bytes == 0) return;
  if (dstDevice == srcDevice) {
    std::memmove(dst, src, bytes);
    return;
  }
  // Word at a time, so the stand-in copy engine costs little CPU next to the
  // rate it is held to.
  constexpr uint64_t kWord = 0x0101010101010101ull * kScramble;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    w ^= kWord;
    std::memcpy(d + i, &w, 8);
  }
  for (; i < bytes; ++i) d[i] = s[i] ^ kScramble;
}

MemoryMap::~MemoryMap() {
  for (auto& [base, b] : blocks_) {
    munmap(reinterpret_cast<void*>(base), mappedSize(b.bytes));
    if (b.fd >= 0) close(b.fd);
  }
}

void* MemoryMap::allocate(size_t bytes) {
  const size_t size = mappedSize(bytes);
  const int fd = memfd_create("hcl-sim", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(size)) == 0) p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  std::lock_guard lock(mutex_);
  blocks_[reinterpret_cast<uintptr_t>(p)] = Block{size, fd, nextSerial_++};
  return p;
}

bool MemoryMap::release(void* ptr) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == blocks_.end() || it->second.fd < 0) return false;
  munmap(ptr, it->second.bytes);
  close(it->second.fd);
  blocks_.erase(it);
  return true;
}

const std::pair<const uintptr_t, MemoryMap::Block>* MemoryMap::find(uintptr_t p) const {
  auto it = blocks_.upper_bound(p);
  if (it == blocks_.begin()) return nullptr;
  --it;
  return p < it->first + it->second.bytes ? &*it : nullptr;
}

bool MemoryMap::contains(const void* ptr) const {
  std::lock_guard lock(mutex_);
  return find(reinterpret_cast<uintptr_t>(ptr)) != nullptr;
}

Status MemoryMap::exportHandle(const void* ptr, DeviceIpcHandle* handle, uint64_t* offset) const {
  std::lock_guard lock(mutex_);
  const auto* entry = find(reinterpret_cast<uintptr_t>(ptr));
  if (!entry || entry->second.fd < 0) {
    return invalidArgument(fmt::format("{} is not memory this sim device allocated", ptr));
  }
  HandleBody body{kHandleMagic, static_cast<int32_t>(getpid()), entry->second.fd, 0, entry->second.bytes,
                  entry->second.serial};
  *handle = {};
  std::memcpy(handle->bytes, &body, sizeof(body));
  *offset = reinterpret_cast<uintptr_t>(ptr) - entry->first;
  return {};
}

Status MemoryMap::openHandle(const DeviceIpcHandle& handle, void** base) {
  HandleBody body{};
  std::memcpy(&body, handle.bytes, sizeof(body));
  if (body.magic != kHandleMagic) return invalidArgument("not a sim IPC handle");
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(body.pid), 0));
  if (pidfd < 0) return systemError(fmt::format("sim IPC: pidfd_open({}): {}", body.pid, std::strerror(errno)));
  const int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, body.fd, 0));
  const int err = errno;
  close(pidfd);
  if (fd < 0) return systemError(fmt::format("sim IPC: pidfd_getfd(pid {}, fd {}): {}", body.pid, body.fd, std::strerror(err)));
  void* p = mmap(nullptr, body.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return systemError(fmt::format("sim IPC: mmap of {} bytes: {}", body.bytes, std::strerror(errno)));
  std::lock_guard lock(mutex_);
  blocks_[reinterpret_cast<uintptr_t>(p)] = Block{body.bytes, -1, 0};
  *base = p;
  return {};
}

Status MemoryMap::closeHandle(void* base) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<uintptr_t>(base));
  if (it == blocks_.end() || it->second.fd >= 0) {
    return invalidArgument(fmt::format("{} is not a sim IPC mapping", base));
  }
  munmap(base, it->second.bytes);
  blocks_.erase(it);
  return {};
}

bool canOpenPeerHandles(std::string* whyNot) {
  // pidfd_getfd needs ptrace access to the peer; Yama's default (1) allows
  // it only on descendants, so sibling ranks need scope 0 or CAP_SYS_PTRACE.
  if (geteuid() == 0) return true;
  std::ifstream scope("/proc/sys/kernel/yama/ptrace_scope");
  int value = 0;
  if (scope >> value && value > 0) {
    *whyNot = fmt::format("kernel.yama.ptrace_scope is {} and the process is not root, so pidfd_getfd on a sibling fails", value);
    return false;
  }
  return true;
}

}  // namespace hcl::sim
