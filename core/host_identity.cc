#include "core/host_identity.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <mutex>
#include <random>

#include "core/params.h"

namespace hcl {

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  return buf;
}

std::string hostIdentity() {
  std::string id = paramString("HCL_HOSTID");
  if (!id.empty()) return id;
  id = hostName();
  // Containers can share a hostname; the boot id tells kernels apart.
  std::ifstream bootIdFile("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (bootIdFile && std::getline(bootIdFile, bootId) && !bootId.empty()) id += ":" + bootId.substr(0, 8);
  return id;
}

std::string networkStackIdentity() {
  std::ifstream bootIdFile("/proc/sys/kernel/random/boot_id");
  std::string bootId;
  if (!bootIdFile || !std::getline(bootIdFile, bootId) || bootId.empty()) return {};
  char ns[64] = {};
  const ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  if (n <= 0) return {};
  return bootId + " " + std::string(ns, static_cast<size_t>(n));
}

uint64_t processToken() {
  // Regenerated after fork() so a child never shares its parent's token.
  static std::mutex mutex;
  static pid_t ownerPid = 0;
  static uint64_t token = 0;
  std::lock_guard lock(mutex);
  if (ownerPid != getpid()) {
    std::random_device rd;
    token = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    if (token == 0) token = 1;
    ownerPid = getpid();
  }
  return token;
}

}  // namespace hcl
