#include "core/execution_gate.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/deadline.h"

namespace hcl {
namespace {

// Moves of ownership a gate records (a few dozen bytes each) before it
// stops moving it: threads that take over from each other in runs of
// kRebiasAfter or more then pay the barrier on the non-owner's entries
// instead of growing the list.
constexpr size_t kMaxOwners = 1024;

// Unique among the threads alive. The thread pointer is one load; a
// thread_local's address costs a call into the dynamic linker from a
// shared library.
const void* callingThread() {
#if defined(__has_builtin) && __has_builtin(__builtin_thread_pointer)
  return __builtin_thread_pointer();
#else
  thread_local const char marker = 0;
  return &marker;
#endif
}

#if defined(__SANITIZE_THREAD__)
#define HCL_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HCL_UNDER_TSAN 1
#endif
#endif

bool registerMembarrier() {
#if defined(HCL_UNDER_TSAN)
  return false;  // ThreadSanitizer cannot see the barrier and would report the owner's path as a race
#else
  const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return false;
  return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
}

// Every running thread of the process executes a full memory barrier before
// this returns: the owner's store that announced it is inside is visible,
// or its later load sees the revocation. The registration lasts as long as
// the process image; should the kernel refuse anyway, the owner's path can
// no longer be made safe, and going on could let two threads run at once.
void heavyBarrier() {
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
    return;
  }
  std::fprintf(stderr, "HCL: membarrier failed after it was registered (%s); stopping\n", std::strerror(errno));
  std::abort();
}

// The owner's half: the compiler must keep its store before its load; the
// processor may not, which heavyBarrier makes up for.
void lightBarrier() { std::atomic_signal_fence(std::memory_order_seq_cst); }

}  // namespace

bool ExecutionGate::ownersPathAvailable() {
  static const bool available = registerMembarrier();
  return available;
}

ExecutionGate::Hold ExecutionGate::tryEnterAsOwner() {
  // A gate has an owner only where the owner's path is available.
  Owner* owner = owner_.load(std::memory_order_acquire);
  if (!owner || owner->thread != callingThread()) return {};
  assert(!owner->inside.load(std::memory_order_relaxed) && "the execution gate is not reentrant");
  owner->inside.store(true, std::memory_order_relaxed);
  lightBarrier();
  // Ownership only moves while revoking_ is set, and is published before it
  // is cleared: a thread that read a stale owner sees one or the other.
  if (revoking_.load(std::memory_order_acquire) || owner_.load(std::memory_order_relaxed) != owner) {
    owner->inside.store(false, std::memory_order_release);
    return {};
  }
  owner->entries.store(owner->entries.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return Hold(this, owner);
}

ExecutionGate::Hold ExecutionGate::enter() {
  if (Hold fast = tryEnterAsOwner()) return fast;
  mutex_.lock();
  Owner* current = owner_.load(std::memory_order_relaxed);
  if (current && current->thread != callingThread()) {
    revokeOwner(current);
    revokedForHolder_ = true;
    if (++revocationsSinceMove_ >= kRevocationsToShare) {
      noMoreOwners_ = true;
      owner_.store(nullptr, std::memory_order_relaxed);  // published when revoking_ is cleared
    }
  }
  noteSlowEntry(current);
  return Hold(this, nullptr);
}

void ExecutionGate::revokeOwner(Owner* owner) {
  revoking_.store(true, std::memory_order_relaxed);
  heavyBarrier();
  Backoff backoff;
  while (owner->inside.load(std::memory_order_acquire)) backoff.pause();
}

// Under mutex_, with the owner (if any) outside: moves ownership to the
// calling thread once it has entered kRebiasAfter times in a row and the
// owner not at all meanwhile.
void ExecutionGate::noteSlowEntry(Owner* current) {
  if (noMoreOwners_) return;
  const void* me = callingThread();
  if (current && current->thread == me) {
    slowRun_ = 0;  // the owner itself, while another thread held the gate
    return;
  }
  const uint64_t ownerEntries = current ? current->entries.load(std::memory_order_relaxed) : 0;
  if (me != lastSlowThread_ || ownerEntries != ownerEntriesAtRunStart_) {
    lastSlowThread_ = me;
    slowRun_ = 0;
    ownerEntriesAtRunStart_ = ownerEntries;
  }
  if (++slowRun_ < kRebiasAfter || owners_.size() >= kMaxOwners || !ownersPathAvailable()) return;
  owners_.push_back(std::make_unique<Owner>(me));
  owner_.store(owners_.back().get(), std::memory_order_release);
  slowRun_ = 0;
  revocationsSinceMove_ = 0;
}

void ExecutionGate::leave(Owner* owner) {
  if (owner) {
    owner->inside.store(false, std::memory_order_release);
    return;
  }
  if (std::exchange(revokedForHolder_, false)) revoking_.store(false, std::memory_order_release);
  mutex_.unlock();
}

void ExecutionGate::retire() {
  std::lock_guard lock(mutex_);
  noMoreOwners_ = true;
  Owner* current = owner_.load(std::memory_order_relaxed);
  if (!current) return;
  revokeOwner(current);
  owner_.store(nullptr, std::memory_order_relaxed);
  revoking_.store(false, std::memory_order_release);
}

}  // namespace hcl
