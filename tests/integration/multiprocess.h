// Runs a function as N ranks in forked processes, with a deadline, and
// reports which ranks failed. The function returns 0 on success.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/bootstrap_root.h"

namespace hcltest {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct ProcessResult {
  int rank;
  bool exited;
  int code;  // exit code, or signal number when !exited
};

// Forks n processes running fn(rank). Returns each process's result;
// processes still running after timeoutSec are killed and reported with
// signal SIGKILL.
inline std::vector<ProcessResult> runProcesses(int n, const std::function<int(int)>& fn, int timeoutSec,
                                               const EnvList& env = {}) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      int code = fn(r);
      // _exit runs no destructor: a bootstrap root this rank's process runs
      // gets to send the other ranks its last replies first.
      hcl::waitForBootstrapRoots(std::chrono::seconds(3));
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<ProcessResult> results(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  int remaining = n;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      if (done[static_cast<size_t>(r)]) continue;
      int status = 0;
      if (waitpid(pids[static_cast<size_t>(r)], &status, WNOHANG) == pids[static_cast<size_t>(r)]) {
        done[static_cast<size_t>(r)] = true;
        --remaining;
        results[static_cast<size_t>(r)] = {r, WIFEXITED(status), WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status)};
      }
    }
    if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r) {
        if (done[static_cast<size_t>(r)]) continue;
        kill(pids[static_cast<size_t>(r)], SIGKILL);
        waitpid(pids[static_cast<size_t>(r)], nullptr, 0);
        done[static_cast<size_t>(r)] = true;
        results[static_cast<size_t>(r)] = {r, false, SIGKILL};
        --remaining;
      }
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return results;
}

// A loopback TCP port nobody listens on right now, for HCL_COMM_ID: ranks
// that start their bootstrap root themselves leave the forking parent
// without threads (a child forked while another thread holds a lock, such
// as a sanitizer allocator's, can deadlock).
inline int freeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

// The environment of ranks that start their own bootstrap root: rank 0 runs
// it at HCL_COMM_ID, so each rank calls hclGetUniqueId itself after the fork.
inline EnvList rank0RootEnv(const std::string& timeoutMs) {
  return {{"HCL_TIMEOUT_MS", timeoutMs}, {"HCL_COMM_ID", "127.0.0.1:" + std::to_string(freeLoopbackPort())}};
}

inline std::string describeFailures(const std::vector<ProcessResult>& results) {
  std::string out;
  for (const auto& r : results) {
    if (r.exited && r.code == 0) continue;
    out += "rank " + std::to_string(r.rank) +
           (r.exited ? " exited with " + std::to_string(r.code) : " killed by signal " + std::to_string(r.code)) + "; ";
  }
  return out;
}

}  // namespace hcltest

// For code running in a child: report and return 1 from the rank function.
#define RANK_CHECK(cond, ...)                              \
  do {                                                     \
    if (!(cond)) {                                         \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                   \
      std::fprintf(stderr, "\n");                          \
      return 1;                                            \
    }                                                      \
  } while (0)

#define RANK_HCL(call)                                                                          \
  do {                                                                                          \
    hclResult_t r_ = (call);                                                                    \
    if (r_ != hclSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #call, (int)r_,   \
                   hclGetLastError(nullptr));                                                   \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)
