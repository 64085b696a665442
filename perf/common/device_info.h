// The "#  Rank N Group G Pid P on HOST device D [bus] NAME" lines: what each
// rank runs on. Every rank is on the CPU device, so the name is the host's
// CPU model and the bus id is zero.
#pragma once

#include <cstdint>
#include <string>

namespace hcl::perf {

// One rank's facts as they travel between processes (fixed size, trivially copyable).
struct RankRecord {
  int32_t worldRank;
  int32_t group;
  int32_t pid;
  int32_t proc;        // process index
  int32_t localIndex;  // thread * nGpus + gpu within the process
  int32_t pad;
  uint64_t hostHash;
  char host[64];
  char name[192];
};

struct DeviceLine {
  int rank;
  int group;
  int pid;
  std::string host;
  int device;
  std::string busId;  // "0000:00:00"
  std::string name;
};

// The host name up to its first '.', as nccl-tests prints it.
std::string shortHostName();
// "CPU: <model name from /proc/cpuinfo>" (the machine type where there is none).
std::string cpuDeviceName();
uint64_t hashHostName(const std::string& host);
RankRecord makeRankRecord(int worldRank, int group, int proc, int localIndex);

// The line without its newline.
std::string formatDeviceLine(const DeviceLine& d);

}  // namespace hcl::perf
