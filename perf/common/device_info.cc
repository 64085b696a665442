#include "perf/common/device_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace hcl::perf {

std::string shortHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  std::string host(name);
  const size_t dot = host.find('.');
  if (dot != std::string::npos) host.resize(dot);
  return host;
}

std::string cpuDeviceName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string model = line.substr(colon + 1);
    model.erase(0, model.find_first_not_of(" \t"));
    if (!model.empty()) return "CPU: " + model;
  }
  utsname u{};
  if (uname(&u) == 0) return std::string("CPU: ") + u.machine;
  return "CPU";
}

uint64_t hashHostName(const std::string& host) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : host) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

RankRecord makeRankRecord(int worldRank, int group, int proc, int localIndex) {
  RankRecord r{};
  r.worldRank = worldRank;
  r.group = group;
  r.pid = static_cast<int32_t>(getpid());
  r.proc = proc;
  r.localIndex = localIndex;
  const std::string host = shortHostName();
  r.hostHash = hashHostName(host);
  std::snprintf(r.host, sizeof r.host, "%s", host.c_str());
  std::snprintf(r.name, sizeof r.name, "%s", cpuDeviceName().c_str());
  return r;
}

std::string formatDeviceLine(const DeviceLine& d) {
  char line[512];
  std::snprintf(line, sizeof line, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s", d.rank, d.group, d.pid,
                d.host.c_str(), d.device, d.busId.c_str(), d.name.c_str());
  return line;
}

}  // namespace hcl::perf
