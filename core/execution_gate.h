// The lock that lets one operation at a time run on a communicator.
//
// Most programs run a communicator's operations from one thread. That thread
// becomes the gate's owner and enters and leaves it with plain loads and
// stores. A locked instruction there (a mutex, or a shared_ptr's count) made
// the core wait for the line that the call had just written for a peer to
// reach the peer's core: about a third of a small broadcast's time.
//
// Any other thread takes a mutex and revokes the owner's path for as long as
// it holds the gate: it raises a flag, makes every thread of the process
// execute a full barrier (membarrier), and waits until the owner is outside.
// That barrier stands in for the one the owner leaves out, so one of the two
// always sees the other. It costs microseconds, so ownership moves to a
// thread that enters kRebiasAfter times in a row while the owner does not;
// where threads keep taking turns (kRevocationsToShare revocations without
// such a move), the gate stops having an owner and is a plain mutex.
//
// Where the barrier is unavailable (old kernels, ThreadSanitizer, which
// cannot see it) every thread takes the mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace hcl {

class ExecutionGate {
  struct Owner;

 public:
  // Entries in a row by one other thread, while the owner makes none, after
  // which that thread becomes the owner.
  static constexpr uint32_t kRebiasAfter = 8;
  // Revocations without a move of ownership after which the gate has no
  // owner any more.
  static constexpr uint32_t kRevocationsToShare = 64;

  // Holds the gate until released or destroyed.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept
        : gate_(std::exchange(other.gate_, nullptr)), owner_(std::exchange(other.owner_, nullptr)) {}
    Hold& operator=(Hold&& other) noexcept {
      if (this != &other) {
        release();
        gate_ = std::exchange(other.gate_, nullptr);
        owner_ = std::exchange(other.owner_, nullptr);
      }
      return *this;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release(); }

    explicit operator bool() const { return gate_ != nullptr; }
    // Whether it was taken on the owner's path (no mutex, no barrier).
    bool onOwnersPath() const { return owner_ != nullptr; }
    void release() {
      if (gate_) std::exchange(gate_, nullptr)->leave(std::exchange(owner_, nullptr));
    }

   private:
    friend class ExecutionGate;
    Hold(ExecutionGate* gate, Owner* owner) : gate_(gate), owner_(owner) {}
    ExecutionGate* gate_ = nullptr;
    Owner* owner_ = nullptr;  // set when held on the owner's path
  };

  ExecutionGate() = default;
  ExecutionGate(const ExecutionGate&) = delete;
  ExecutionGate& operator=(const ExecutionGate&) = delete;

  // Blocks until the calling thread holds the gate. Not reentrant.
  [[nodiscard]] Hold enter();
  // Holds the gate on the owner's path, or returns an empty hold at once:
  // the caller is not the owner, or another thread holds or wants the gate.
  [[nodiscard]] Hold tryEnterAsOwner();
  // From now on no thread enters on the owner's path; returns once the
  // owner has left. Called before the communicator may be destroyed, so that
  // an owner's operation in flight, which takes no reference, ends first.
  void retire();
  // Whether the owner's path works in this process.
  static bool ownersPathAvailable();

 private:
  // One per move of ownership, which is bounded. Kept until the gate is
  // destroyed: a thread that read a stale owner pointer may still store to
  // its record after ownership moved on.
  struct Owner {
    explicit Owner(const void* t) : thread(t) {}
    const void* const thread;
    std::atomic<bool> inside{false};
    std::atomic<uint64_t> entries{0};  // written by the owner only
  };

  void leave(Owner* owner);
  void revokeOwner(Owner* owner);
  void noteSlowEntry(Owner* current);

  std::atomic<Owner*> owner_{nullptr};
  std::atomic<bool> revoking_{false};
  std::mutex mutex_;
  // Under mutex_.
  std::vector<std::unique_ptr<Owner>> owners_;
  bool revokedForHolder_ = false;
  bool noMoreOwners_ = false;  // retired, or shared by threads taking turns
  uint32_t revocationsSinceMove_ = 0;
  const void* lastSlowThread_ = nullptr;
  uint32_t slowRun_ = 0;
  uint64_t ownerEntriesAtRunStart_ = 0;
};

}  // namespace hcl
