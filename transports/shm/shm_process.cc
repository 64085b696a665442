#include "transports/shm/shm_process.h"

#include <signal.h>
#include <sys/uio.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace hcl::shm {

ssize_t readProcessMemory(int64_t pid, uint64_t remoteAddress, void* local, size_t bytes,
                          int* error) {
  iovec localIov{local, bytes};
  iovec remoteIov{reinterpret_cast<void*>(static_cast<uintptr_t>(remoteAddress)), bytes};
  const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid), &localIov, 1, &remoteIov, 1, 0);
  if (n < 0) *error = errno;
  return n;
}

ssize_t writeProcessMemory(int64_t pid, uint64_t remoteAddress, const void* local, size_t bytes,
                           int* error) {
  iovec localIov{const_cast<void*>(local), bytes};
  iovec remoteIov{reinterpret_cast<void*>(static_cast<uintptr_t>(remoteAddress)), bytes};
  const ssize_t n = ::process_vm_writev(static_cast<pid_t>(pid), &localIov, 1, &remoteIov, 1, 0);
  if (n < 0) *error = errno;
  return n;
}

bool processInvisible(int64_t pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == -1 && errno == ESRCH;
}

bool processExited(int64_t pid) {
  if (processInvisible(pid)) return true;
  // A killed process stays visible to kill() until its parent reaps it; its
  // state in /proc/<pid>/stat ("pid (comm) S ...") already says Z or X.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  const char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace hcl::shm
