// The transport seam. A Transport sets up Connections to peers; a Connection
// moves messages in both directions, non-blocking, with per-direction FIFO
// matching: the k-th send posted to a peer matches the k-th receive that peer
// posts from us. Transports know nothing about collectives.
//
// Setup runs in phases with an out-of-band barrier between them, so that one
// side can create resources (a listener, a shared segment) before the other
// opens them:
//   listen(self)  -> publish PeerInfo -> prepare(peers) -> barrier (an
//   alltoall carrying preparedFor(peer)) -> connect(peers) -> barrier -> finish()
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/peer_info.h"
#include "core/status.h"
#include "device/device.h"
#include "transports/net_request.h"

namespace hcl {

struct Link;

enum class TransportKind : uint8_t { Local = 0, Shm = 1, Tcp = 2, Ofi = 3, NetPlugin = 4, Ib = 5 };
const char* toString(TransportKind k);
// Every kind, in the order transports are set up (transports/registry.cc).
std::span<const TransportKind> allTransportKinds();

// One message in flight. Owned by the caller, which keeps it alive (and does
// not move it) until state() leaves Pending or the connection is destroyed.
struct Transfer {
  enum class State : int { Pending = 0, Done = 1, Failed = 2 };

  bool isSend = true;
  void* buffer = nullptr;  // source for sends, destination for receives
  size_t bytes = 0;
  // Checked on receive: a message with a different tag or size is an error
  // ("peer sent allgather of 8 bytes, expected allreduce of 16 bytes").
  uint32_t tag = 0;

  std::atomic<int> state{static_cast<int>(State::Pending)};
  bool done() const { return state.load(std::memory_order_acquire) != static_cast<int>(State::Pending); }
  bool failed() const { return state.load(std::memory_order_acquire) == static_cast<int>(State::Failed); }
  void complete(State s) { state.store(static_cast<int>(s), std::memory_order_release); }

  size_t progressed = 0;  // transport-private progress counter
};

// A message whose tag or size is not what the receive expects. A
// collective's tag holds its kind in the low byte and, above, a hash of the
// call's arguments and its place in the communicator's sequence of calls.
inline Status messageMismatch(int rank, int peer, uint32_t tag, uint64_t bytes, uint32_t wantTag, uint64_t wantBytes) {
  return invalidUsage(fmt::format(
      "rank {}: message from rank {} has tag {:#010x}/{} bytes, expected tag {:#010x}/{} bytes (the ranks' calls "
      "differ: collective, count, data type, root, operator or order; or send/recv sizes)",
      rank, peer, tag, bytes, wantTag, wantBytes));
}

// A peer's buffer as the peer described it: its address there and, for
// memory it allocated shareably (hclMemAlloc), what lets this process map
// the allocation (serial 0: not shareable).
struct PeerBuffer {
  uint64_t address = 0;
  uint64_t allocBase = 0;
  uint64_t allocSerial = 0;
  int64_t allocFd = -1;
  uint64_t bytes = 0;  // from address, what the owner's call covers
};

class Connection {
 public:
  virtual ~Connection() = default;
  // Queues a transfer. Never blocks.
  virtual Status post(Transfer& transfer) = 0;
  // Moves bytes for queued transfers; never blocks. Sets *madeProgress when
  // any byte moved or any transfer completed. A failure (peer gone, size
  // mismatch) is returned, and every queued transfer is marked Failed.
  virtual Status progress(bool* madeProgress) = 0;
  // Breaks the link so the peer notices quickly (socket reset, shared
  // flag). After abort() the connection never touches a queued Transfer or
  // its buffer again, so the caller may free them at once.
  virtual void abort() = 0;
  // abort() for a failure: where the link can carry text to the peer, it
  // passes `why` on, so a rank that learns of a failure from this one's
  // abort can name its cause. Safe from any thread; over TCP it may wait
  // up to 20 ms for the text to leave the socket.
  virtual void abortBecause(const Status& /*why*/) { abort(); }
  // abort() by this rank's own choice (hclCommAbort, revoke): where the
  // link's abort alone would read as a broken link (TCP's reset), it tells
  // the peer that this rank aborted.
  virtual void abortOnPurpose() { abort(); }
  // "tcp 10.0.0.2:41233 via eth0", "shm (single copy above 64 KiB)", ...
  virtual std::string describe() const = 0;

  // One-sided access to the peer's memory, where the link allows it (shared
  // memory with single copy, ranks of one process; RDMA later). The copies
  // are done when the call returns. Addresses are the peer's own, learnt
  // from a message; the caller makes sure the peer keeps them valid.
  virtual bool peerMemoryAccess() const { return false; }
  virtual Status readPeer(uint64_t /*peerAddress*/, void* /*local*/, size_t /*bytes*/) {
    return internalError(describe() + ": no access to the peer's memory");
  }
  virtual Status writePeer(uint64_t /*peerAddress*/, const void* /*local*/, size_t /*bytes*/) {
    return internalError(describe() + ": no access to the peer's memory");
  }
  // Where [peerAddress, peerAddress + bytes) of `buffer` is mapped in this
  // process, so it can be loaded and stored directly; null when it cannot be
  // (then readPeer/writePeer). A later call may drop an older mapping, but
  // never the one the call before it returned, so two can be used together.
  virtual void* mapPeer(const PeerBuffer& /*buffer*/, uint64_t /*peerAddress*/, size_t /*bytes*/) { return nullptr; }
  // After loads or stores through mapPeer's mappings: an error when the peer
  // aborted meanwhile, since its call may have returned and its caller
  // reused the buffers while they ran (what readPeer/writePeer check too).
  virtual Status checkMappedAccess() { return {}; }
};

// What a transport needs to know about the communicator being built.
struct TransportContext {
  int rank = 0;
  int nranks = 0;
  const std::vector<PeerInfo>* peers = nullptr;  // filled after the PeerInfo exchange
  const std::vector<Link>* links = nullptr;  // links[peer], filled after selection
  // prepared[r]: what rank r's transports left for this rank in
  // preparedFor(), packed (transports/prepared_blobs.h); filled between
  // prepare() and connect().
  const std::vector<std::vector<uint8_t>>* prepared = nullptr;
  uint8_t secret[16] = {};                        // shared by the communicator's members
  uint64_t commTag = 0;                           // distinguishes communicators of one secret
  int64_t timeoutMs = 60000;
  const std::atomic<bool>* abortFlag = nullptr;
  // The one network links may take (config->netName, else HCL_NET); Any: the best.
  NetRequest net;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual TransportKind kind() const = 0;
  // Before PeerInfo is published: open listeners, add addresses to `self`.
  virtual Status listen(const TransportContext& ctx, PeerInfo& self) = 0;
  // After PeerInfo exchange: create resources for links to `peers`.
  virtual Status prepare(const TransportContext& ctx, const std::vector<int>& peers) = 0;
  // What prepare() left for `peer` to read in connect() (say the handle of
  // a listener for it); the barrier between them carries it, to that peer
  // only. Empty: nothing.
  virtual std::vector<uint8_t> preparedFor(int /*peer*/) const { return {}; }
  // After a barrier: open the links. out[peer] receives each connection.
  virtual Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                         std::vector<std::unique_ptr<Connection>>& out) = 0;
  // After a second barrier: drop names other ranks no longer need (unlink).
  virtual void finish() = 0;
  // At most how many descriptors a link to one peer holds open (sockets, a
  // segment's descriptor); init makes room for them (core/fd_limit.h).
  virtual size_t descriptorsPerPeer() const { return 0; }
  // GPU-direct seam: true when this transport can register memory of `device`
  // (dma-buf or peer memory) and move it without staging through the host.
  // No transport of this build can yet; verbs and libfabric's FI_HMEM will.
  virtual bool canRegisterDeviceMemory(const Device& device) const { return false; }
};

std::unique_ptr<Transport> makeTransport(TransportKind kind);

}  // namespace hcl
