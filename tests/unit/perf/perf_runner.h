// Starts perf binaries the three ways users do (one process with threads,
// processes under a RANK/WORLD_SIZE launcher with HCL_COMM_ID, mpirun) and
// collects each process's exit status and output.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hcltest {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct ProcessOutput {
  bool exited = false;  // false: killed (signal or timeout)
  int code = -1;        // exit code, or the signal number
  std::string out;      // stdout
  std::string err;      // stderr
};

struct PerfRun {
  std::vector<ProcessOutput> procs;  // index = process rank
  bool allSucceeded() const;
  // For failure messages: every process's status and stderr.
  std::string describe() const;
};

// The directory of the perf binaries (set by the build).
std::string perfBinary(const std::string& name);

PerfRun runSingle(const std::string& binary, const std::vector<std::string>& args, const EnvVars& env = {},
                  int timeoutSec = 120);
// nprocs processes with RANK, WORLD_SIZE, LOCAL_RANK and HCL_COMM_ID=127.0.0.1:<free port>.
PerfRun runWithLauncherEnv(const std::string& binary, const std::vector<std::string>& args, int nprocs,
                           const EnvVars& env = {}, int timeoutSec = 120);
// The same, with each process's own arguments (one process per entry).
PerfRun runWithLauncherEnv(const std::string& binary, const std::vector<std::vector<std::string>>& argsPerProcess,
                           const EnvVars& env = {}, int timeoutSec = 120);
// mpirun --oversubscribe --allow-run-as-root -np nprocs; stdout of all ranks
// arrives as procs[0].out.
PerfRun runMpi(const std::string& mpirun, const std::string& binary, const std::vector<std::string>& args, int nprocs,
               const EnvVars& env = {}, int timeoutSec = 120);

int freeTcpPort();

}  // namespace hcltest
