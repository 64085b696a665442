#include "multiprocess.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <thread>

namespace hcl::test {

SharedMemory::SharedMemory(size_t bytes) : bytes_(bytes) {
  data_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (data_ == MAP_FAILED) throw std::runtime_error("mmap of shared test memory failed");
}

SharedMemory::~SharedMemory() { ::munmap(data_, bytes_); }

bool ProcessBarrier::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const unsigned generation = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }
  while (generation_.load(std::memory_order_acquire) == generation) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

std::vector<ChildStatus> runProcesses(int n, const std::function<int(int rank)>& body,
                                      std::chrono::seconds timeout) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < n; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      throw std::runtime_error("fork failed");
    }
    if (pid == 0) {
      int code = 99;
      try {
        code = body(rank);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d threw: %s\n", rank, e.what());
      } catch (...) {
        std::fprintf(stderr, "rank %d threw\n", rank);
      }
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(code);
    }
    pids.push_back(pid);
  }

  // Poll (rather than block in waitpid) so dead children are reaped at once
  // and the deadline holds.
  std::vector<ChildStatus> result(static_cast<size_t>(n));
  std::vector<bool> reaped(static_cast<size_t>(n), false);
  int remaining = n;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool killedAll = false;
  while (remaining > 0) {
    bool any = false;
    for (int i = 0; i < n; ++i) {
      if (reaped[i]) continue;
      int status = 0;
      const pid_t r = ::waitpid(pids[i], &status, WNOHANG);
      if (r != pids[i]) continue;
      reaped[i] = true;
      --remaining;
      any = true;
      ChildStatus& s = result[i];
      s.timedOut = killedAll;
      if (WIFEXITED(status)) {
        s.exited = true;
        s.code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        s.signal = WTERMSIG(status);
      }
    }
    if (!killedAll && std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "runProcesses: deadline passed, killing the remaining children\n");
      for (int i = 0; i < n; ++i) {
        if (!reaped[i]) ::kill(pids[i], SIGKILL);
      }
      killedAll = true;
    }
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return result;
}

}  // namespace hcl::test
