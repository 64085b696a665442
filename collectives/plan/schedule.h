// A schedule is what an algorithm produces for one rank: a straight-line
// program of non-blocking sends and receives, waits, and local reductions and
// copies. It refers to buffers symbolically (send, recv, scratch + offset), so
// generating one is a pure function that tests can inspect and run on an
// in-memory transport.
//
// Execution is in program order. Send/Recv only post a transfer; Wait blocks
// the program (not the thread) until that transfer completes. Every transfer
// is also waited for at the end. Messages to one peer match that peer's
// receives in posting order.
//
// Where every link lets a rank reach its peers' memory (shared memory with
// single copy, ranks in one process; RDMA later), ReadPeer and WritePeer copy
// straight from or into a peer's send, receive or scratch buffer. A schedule
// learns the peer's buffer addresses from a message first: each rank's own
// entry of the Addresses table holds {send, recv, scratch}, and
// exchangeAddresses() swaps entries with a peer.
//
// A step may be conditional on how the run moves data: straight between the
// ranks' buffers (Only::Direct), or staged through the ranks' shared scratch
// (Only::Staged). A run stages where some exchanged buffer is not shareable
// (hclMemAlloc buffers are: peers map them and load and store them
// directly) and every rank's entry proposes staging; each rank proposes
// what was faster in its recent calls of that shape (core/staging_choice.h).
// Every rank decides from the same exchanged entries, so all take the same
// branch. Messages are never conditional.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/reduce/reduce.h"

namespace hcl {

// User: the index-th buffer of the task's table (point-to-point calls).
// Addresses: the run's table of how to reach every rank's send and recv
// buffers (the executor's AddressEntry, kAddressEntryBytes per rank); only
// exchangeAddresses() refers to it.
enum class BufferId : uint8_t { Send, Recv, Scratch, User, Addresses };

// An Addresses entry: three of the executor's PeerBuffer (40 bytes each),
// whose first word is the address and last the bytes peers may reach, and a
// word of flags (kProposeStaging).
constexpr size_t kAddressEntryBytes = 128;
constexpr size_t kAddressSendOffset = 0, kAddressRecvOffset = 40, kAddressScratchOffset = 80,
                 kAddressFlagsOffset = 120;
constexpr uint64_t kProposeStaging = 1;

struct BufferRef {
  BufferId id = BufferId::Send;
  size_t offset = 0;  // bytes
  uint32_t index = 0;  // for User
};

// When a step runs (see the top of this file).
enum class Only : uint8_t {
  Always,
  Direct,  // the run goes straight between the ranks' buffers
  Staged,  // the run stages through shared scratch (see the top of this file)
};

struct Step {
  enum class Kind : uint8_t {
    Send,     // post transfer `transfer`: `bytes` from a to `peer`
    Recv,     // post transfer `transfer`: `bytes` from `peer` into dst
    Wait,     // wait for transfer `transfer`
    Reduce,   // dst = a (op) b, `count` elements, with forms
    Convert,  // dst = a converted between forms, `count` elements
    Copy,     // dst = a, `bytes` bytes
    ReadPeer,   // dst (ours) = a (Send/Recv/Scratch of `peer`), `bytes` bytes
    WritePeer,  // dst (Send/Recv/Scratch of `peer`) = a (ours), `bytes` bytes
    // dst (ours) = a (Send/Recv/Scratch of `peer`, `bytes` bytes) (op) b (ours),
    // `count` elements: straight from the peer's memory where it is mapped,
    // else read into `via` (ours) first.
    ReducePeer,
    // `peer`'s exchanged entry must cover as many send and receive bytes as
    // ours: for schedules whose reads stay within every rank's own layout,
    // where ranks that disagree on the count would otherwise finish with
    // wrong data instead of an error.
    CheckPeerSizes,
  };
  Kind kind = Kind::Wait;
  int32_t peer = -1;
  uint32_t transfer = 0;
  BufferRef dst, a, b;
  BufferRef via;  // ReducePeer's bounce buffer
  Form dstForm = Form::Native, aForm = Form::Native, bForm = Form::Native;
  size_t count = 0;  // elements, for Reduce/Convert
  size_t bytes = 0;  // for Send/Recv/Copy
  Only only = Only::Always;
  // dst is not read again soon: its stores may bypass the cache.
  bool streamDst = false;
};

struct Schedule {
  std::vector<Step> steps;
  uint32_t transfers = 0;
  size_t scratchBytes = 0;
  // Calls take their scratch from this many regions in turn, so a call's
  // stores land on lines its peers last read calls ago, which they no
  // longer cache: storing into a line another core holds waits for its
  // invalidation (see window.cc).
  size_t scratchTurns = 1;
  // Of this rank's own send and receive buffers, the bytes the call covers:
  // peers' steps must stay within them.
  size_t sendBytes = 0, recvBytes = 0;
  uint32_t tag = 0;  // message tag: the collective kind, for mismatch detection
  std::string algorithm;
};

// Helpers that keep generators readable.
class ScheduleBuilder {
 public:
  explicit ScheduleBuilder(Schedule& s) : s_(s) {}
  uint32_t send(int peer, BufferRef src, size_t bytes);
  uint32_t recv(int peer, BufferRef dst, size_t bytes);
  void wait(uint32_t transfer);
  void waitAll(const std::vector<uint32_t>& transfers);
  void reduce(BufferRef dst, Form dstForm, BufferRef a, Form aForm, BufferRef b, Form bForm,
              size_t count);
  void convert(BufferRef dst, Form dstForm, BufferRef a, Form aForm, size_t count);
  // streamDst: dst is not read again soon, so its stores may bypass the cache.
  void copy(BufferRef dst, BufferRef src, size_t bytes, bool streamDst = false);
  // Swaps Addresses entries with `peer`; returns the receive to wait for
  // before reading or writing that peer's buffers.
  uint32_t exchangeAddresses(int self, int peer);
  void readPeer(int peer, BufferRef dst, BufferRef peerSrc, size_t bytes, bool streamDst = false);
  void writePeer(int peer, BufferRef peerDst, BufferRef src, size_t bytes);
  void reducePeer(int peer, BufferRef dst, Form dstForm, BufferRef peerA, Form aForm, BufferRef b, Form bForm,
                  size_t count, size_t peerBytes, BufferRef via);
  // After exchangeAddresses with `peer` has completed.
  void checkPeerSizes(int peer);
  // Steps added from now on, other than messages, run only when `only` holds.
  void only(Only o) { only_ = o; }

 private:
  void peerCopy(Step::Kind kind, int peer, BufferRef dst, BufferRef a, size_t bytes, bool streamDst);
  void push(Step st);
  Schedule& s_;
  Only only_ = Only::Always;
};

inline BufferRef sendAt(size_t off) { return {BufferId::Send, off}; }
inline BufferRef recvAt(size_t off) { return {BufferId::Recv, off}; }
inline BufferRef scratchAt(size_t off) { return {BufferId::Scratch, off}; }
inline BufferRef userAt(uint32_t index) { return {BufferId::User, 0, index}; }
inline BufferRef peerSendAt(size_t off) { return {BufferId::Send, off}; }
inline BufferRef peerRecvAt(size_t off) { return {BufferId::Recv, off}; }
inline BufferRef peerScratchAt(size_t off) { return {BufferId::Scratch, off}; }
inline BufferRef addressEntry(int rank) { return {BufferId::Addresses, static_cast<size_t>(rank) * kAddressEntryBytes}; }
// True for steps that move data between ranks through transfers.
inline bool usesTransfer(Step::Kind k) {
  return k == Step::Kind::Send || k == Step::Kind::Recv || k == Step::Kind::Wait;
}

}  // namespace hcl
