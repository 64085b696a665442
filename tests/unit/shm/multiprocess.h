// Fork-based harness for tests that need ranks in separate processes. The
// parent creates no threads before forking; every wait has a deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

namespace hcl::test {

// Anonymous MAP_SHARED memory, visible to all children forked after creation.
class SharedMemory {
 public:
  explicit SharedMemory(size_t bytes);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  void* data() const { return data_; }

 private:
  void* data_;
  size_t bytes_;
};

// A reusable barrier living in shared memory (lock-free atomics are
// address-free, so they work across processes).
class ProcessBarrier {
 public:
  explicit ProcessBarrier(int parties) : parties_(parties) {}
  // False when the others did not arrive in time.
  bool wait(std::chrono::milliseconds timeout);

 private:
  const int parties_;
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

struct ChildStatus {
  bool exited = false;  // exited normally (then `code` is set)
  int code = -1;
  int signal = 0;         // killed by this signal
  bool timedOut = false;  // the parent killed it at the deadline
};

// Forks n children running body(rank); a child _exits with body's return
// value (or 99 when body throws). Children still running at the deadline are
// killed with SIGKILL.
std::vector<ChildStatus> runProcesses(int n, const std::function<int(int rank)>& body,
                                      std::chrono::seconds timeout = std::chrono::seconds(120));

}  // namespace hcl::test
