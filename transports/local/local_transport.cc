#include "transports/local/local_transport.h"

#include <cstring>
#include <deque>
#include <fmt/format.h>

#include "transports/local/local_endpoint.h"

namespace hcl {
namespace {

class LocalConnection final : public Connection {
 public:
  LocalConnection(int rank, int peer, std::shared_ptr<LocalEndpoint> self,
                  std::shared_ptr<LocalEndpoint> remote)
      : rank_(rank), peer_(peer), self_(std::move(self)), remote_(std::move(remote)) {}

  ~LocalConnection() override { withdrawSends(); }

  Status post(Transfer& t) override {
    if (!failure_.ok()) {
      t.complete(Transfer::State::Failed);
      return failure_;
    }
    if (t.isSend) {
      LocalInbox& box = *remote_->inboxes[static_cast<size_t>(rank_)];
      std::lock_guard lock(box.mutex);
      // After abort() (another thread may fail the communicator while a run
      // is posting) a queued send would outlive the run that owns it: abort
      // withdraws under this lock, so checking here closes the gap.
      if (self_->aborted.load(std::memory_order_acquire)) {
        t.complete(Transfer::State::Failed);
        return remoteError(fmt::format("rank {}: send to rank {} after this rank aborted", rank_, peer_));
      }
      box.sends.push_back(&t);
    } else {
      recvs_.push_back(&t);
    }
    return {};
  }

  Status progress(bool* madeProgress) override {
    if (!failure_.ok()) return failure_;
    LocalInbox& box = *self_->inboxes[static_cast<size_t>(peer_)];
    Status mismatch;
    while (!recvs_.empty()) {
      Transfer* recv = recvs_.front();
      std::lock_guard lock(box.mutex);
      if (box.sends.empty()) break;
      Transfer* send = box.sends.front();
      if (send->tag != recv->tag || send->bytes != recv->bytes) {
        mismatch = messageMismatch(rank_, peer_, send->tag, send->bytes, recv->tag, recv->bytes);
        break;
      }
      box.sends.pop_front();
      if (send->bytes > 0 && send->buffer != recv->buffer) {
        std::memcpy(recv->buffer, send->buffer, send->bytes);
      }
      send->complete(Transfer::State::Done);
      recv->complete(Transfer::State::Done);
      recvs_.pop_front();
      if (madeProgress) *madeProgress = true;
    }
    // fail() takes the peer's inbox lock: never while holding ours, or two
    // ranks that find a mismatch at once would wait for each other.
    if (!mismatch.ok()) return fail(mismatch);
    if (remote_->aborted.load(std::memory_order_acquire) && hasPendingWork()) {
      return fail(remoteError(fmt::format("rank {}: rank {} (same process) aborted", rank_, peer_)));
    }
    return {};
  }

  // Also withdraws our queued sends: after a failure the caller may free
  // their transfers and buffers without progressing this connection again.
  void abort() override {
    self_->aborted.store(true, std::memory_order_release);
    withdrawSends();
  }

  std::string describe() const override { return "local (same process, direct copy)"; }

  // One address space: the peer's addresses are ours.
  bool peerMemoryAccess() const override { return true; }
  Status readPeer(uint64_t peerAddress, void* local, size_t bytes) override {
    return copyPeer(local, reinterpret_cast<const void*>(static_cast<uintptr_t>(peerAddress)), bytes);
  }
  Status writePeer(uint64_t peerAddress, const void* local, size_t bytes) override {
    return copyPeer(reinterpret_cast<void*>(static_cast<uintptr_t>(peerAddress)), local, bytes);
  }

 private:
  bool hasPendingWork() {
    if (!recvs_.empty()) return true;
    LocalInbox& box = *remote_->inboxes[static_cast<size_t>(rank_)];
    std::lock_guard lock(box.mutex);
    return !box.sends.empty();
  }

  // Copies under the lock the peer's abort() takes (the inbox of its sends to
  // us): once the peer has aborted, and may free its buffers, no copy is
  // running and none starts.
  Status copyPeer(void* dst, const void* src, size_t bytes) {
    if (!failure_.ok()) return failure_;
    {
      LocalInbox& box = *self_->inboxes[static_cast<size_t>(peer_)];
      std::lock_guard lock(box.mutex);
      if (!remote_->aborted.load(std::memory_order_acquire)) {
        std::memcpy(dst, src, bytes);
        return {};
      }
    }
    // fail() takes the peer's inbox lock: never while holding ours.
    return fail(remoteError(fmt::format("rank {}: rank {} (same process) aborted", rank_, peer_)));
  }

  // Removes our not-yet-consumed sends from the peer's inbox so it can never
  // read a buffer we are about to give back.
  void withdrawSends() {
    LocalInbox& box = *remote_->inboxes[static_cast<size_t>(rank_)];
    std::lock_guard lock(box.mutex);
    for (Transfer* t : box.sends) t->complete(Transfer::State::Failed);
    box.sends.clear();
  }

  Status fail(Status s) {
    failure_ = s;
    withdrawSends();
    for (Transfer* t : recvs_) t->complete(Transfer::State::Failed);
    recvs_.clear();
    return s;
  }

  int rank_;
  int peer_;
  std::shared_ptr<LocalEndpoint> self_;
  std::shared_ptr<LocalEndpoint> remote_;
  std::deque<Transfer*> recvs_;
  Status failure_;
};

class LocalTransport final : public Transport {
 public:
  ~LocalTransport() override {
    if (self_) self_->aborted.store(true, std::memory_order_release);
    if (registered_) unregisterLocalEndpoint(key_);
  }

  TransportKind kind() const override { return TransportKind::Local; }

  Status listen(const TransportContext&, PeerInfo&) override { return {}; }

  Status prepare(const TransportContext& ctx, const std::vector<int>&) override {
    self_ = std::make_shared<LocalEndpoint>(ctx.nranks);
    key_ = localEndpointKey(ctx, ctx.rank);
    registerLocalEndpoint(key_, self_);
    registered_ = true;
    return {};
  }

  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>& out) override {
    for (int p : peers) {
      auto remote = findLocalEndpoint(localEndpointKey(ctx, p));
      if (!remote) {
        return internalError(fmt::format("rank {}: in-process rank {} did not register", ctx.rank, p));
      }
      out[static_cast<size_t>(p)] =
          std::make_unique<LocalConnection>(ctx.rank, p, self_, std::move(remote));
    }
    return {};
  }

  void finish() override {
    if (registered_) unregisterLocalEndpoint(key_);
    registered_ = false;
  }

 private:
  std::shared_ptr<LocalEndpoint> self_;
  LocalEndpointKey key_;
  bool registered_ = false;
};

}  // namespace

std::unique_ptr<Transport> makeLocalTransport() { return std::make_unique<LocalTransport>(); }

}  // namespace hcl
