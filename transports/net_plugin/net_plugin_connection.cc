#include "transports/net_plugin/net_plugin_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace hcl::netplugin {

NetPluginConnection::NetPluginConnection(NetPlugin& plugin, void* sendComm, void* recvComm, int rank, int peer,
                                         size_t slotBytes, std::string description, std::shared_ptr<PeerWatch> watch)
    : plugin_(plugin),
      sendComm_(sendComm),
      recvComm_(recvComm),
      rank_(rank),
      peer_(peer),
      slotBytes_(slotBytes),
      description_(std::move(description)),
      watch_(std::move(watch)),
      eagerReceives_(plugin.closeCancelsRequests()) {}

NetPluginConnection::~NetPluginConnection() { release(); }

Status NetPluginConnection::open() {
  if (slotBytes_ <= sizeof(PieceHeader)) {
    return internalError(fmt::format("{}: pieces of {} bytes cannot hold a header", description_, slotBytes_));
  }
  for (auto [d, comm] : {std::pair{&send_, sendComm_}, std::pair{&recv_, recvComm_}}) {
    d->buffer = PageBuffer(kSlots * slotBytes_);
    if (!d->buffer.data()) {
      return systemError(fmt::format("{}: no memory for {} bytes of piece buffers", description_, kSlots * slotBytes_));
    }
    for (size_t i = 0; i < kSlots; ++i) d->slots[i].bytes = d->buffer.data() + i * slotBytes_;
    HCL_TRY(plugin_.registerHost(comm, d->buffer.data(), d->buffer.size(), &d->mhandle));
  }
  // Ready before the peer's first send, where receives stay posted.
  if (eagerReceives_) postReceives();
  return recv_.failure;
}

size_t NetPluginConnection::piecesOf(size_t bytes) const {
  const size_t room = slotBytes_ - sizeof(PieceHeader);
  return std::max<size_t>(1, (bytes + room - 1) / room);
}

Status NetPluginConnection::post(Transfer& transfer) {
  std::lock_guard lock(mutex_);
  if (closed_ || !failed_.ok()) {
    transfer.complete(Transfer::State::Failed);
    return failed_.ok() ? systemError(description_ + ": connection closed") : failed_;
  }
  transfer.progressed = 0;
  if (transfer.isSend) {
    toCut_.push_back(&transfer);
  } else {
    receives_.push_back(&transfer);
    piecesWanted_ += piecesOf(transfer.bytes);
  }
  return {};
}

// A direction the plugin failed is an error only for work it leaves undone:
// a peer whose last call returned may close before this rank has taken what
// it sent, or has even posted the receive for it.
// *madeProgress is only ever raised: the caller shares it among its links.
Status NetPluginConnection::progress(bool* madeProgress) {
  std::lock_guard lock(mutex_);
  if (closed_) return failed_.ok() ? systemError(description_ + ": connection closed") : failed_;
  if (!failed_.ok()) return failed_;
  bool moved = false;
  if (send_.failure.ok()) progressSends(&moved);
  Status received = progressReceives(&moved);
  if (moved && madeProgress) *madeProgress = true;
  if (!received.ok()) return fail(std::move(received));
  if (!send_.failure.ok() && (!toCut_.empty() || !awaiting_.empty())) return fail(send_.failure);
  if (!recv_.failure.ok() && !receives_.empty()) return fail(recv_.failure);
  if (watch_ && (!toCut_.empty() || !awaiting_.empty() || !receives_.empty())) {
    if (Status ended = watch_->check(peer_, moved); !ended.ok()) return fail(std::move(ended));
  }
  return {};
}

void NetPluginConnection::progressSends(bool* moved) {
  const size_t room = slotBytes_ - sizeof(PieceHeader);
  while (!toCut_.empty()) {
    Slot& s = send_.at(nextStage_);
    if (s.state != Slot::State::Free) break;
    Transfer& t = *toCut_.front();
    const size_t n = std::min(room, t.bytes - t.progressed);
    s.last = t.progressed + n == t.bytes;
    const PieceHeader header{t.tag, s.last ? 1u : 0u, t.bytes};
    std::memcpy(s.bytes, &header, sizeof header);
    if (n > 0) std::memcpy(s.bytes + sizeof header, static_cast<const uint8_t*>(t.buffer) + t.progressed, n);
    t.progressed += n;
    s.size = sizeof header + n;
    s.state = Slot::State::Staged;
    ++nextStage_;
    if (s.last) {
      toCut_.pop_front();
      awaiting_.push_back(&t);
    }
    *moved = true;
  }
  for (;;) {
    Slot& s = send_.at(nextSendPost_);
    if (s.state != Slot::State::Staged) break;
    void* request = nullptr;
    if (Status st = plugin_.isend(sendComm_, s.bytes, s.size, 0, send_.mhandle, &request); !st.ok()) {
      send_.failure = broken(st);
      return;
    }
    if (!request) break;  // the plugin cannot take it yet
    s.request = request;
    s.state = Slot::State::Posted;
    ++nextSendPost_;
  }
  for (;;) {
    Slot& s = send_.at(nextSendDone_);
    if (s.state != Slot::State::Posted) break;
    bool done = false;
    if (Status st = plugin_.test(s.request, &done, nullptr); !st.ok()) {
      send_.failure = broken(st);
      return;
    }
    if (!done) break;
    s.request = nullptr;
    s.state = Slot::State::Free;
    ++nextSendDone_;
    *moved = true;
    if (s.last) {
      Transfer* t = awaiting_.front();
      awaiting_.pop_front();
      t->complete(Transfer::State::Done);
    }
  }
}

// Posts what queued receives need, takes completions in order, and hands
// whole pieces to the receives; once the receive comm failed, only the last.
Status NetPluginConnection::progressReceives(bool* moved) {
  for (;;) {
    if (recv_.failure.ok()) postReceives();
    if (recv_.failure.ok()) takeReceiveCompletions(moved);
    bool delivered = false;
    while (!receives_.empty()) {
      Slot& s = recv_.at(nextDeliver_);
      if (s.state != Slot::State::Filled) break;
      HCL_TRY(deliver(s));
      s.state = Slot::State::Free;
      ++nextDeliver_;
      delivered = true;
    }
    if (!delivered) return {};
    *moved = true;
  }
}

void NetPluginConnection::postReceives() {
  while (eagerReceives_ || piecesPosted_ < piecesWanted_) {
    Slot& s = recv_.at(nextRecvPost_);
    if (s.state != Slot::State::Free) return;
    void* request = nullptr;
    if (Status st = plugin_.irecv(recvComm_, s.bytes, slotBytes_, 0, recv_.mhandle, &request); !st.ok()) {
      recv_.failure = broken(st);
      return;
    }
    if (!request) return;
    s.request = request;
    s.state = Slot::State::Posted;
    ++nextRecvPost_;
    ++piecesPosted_;
  }
}

void NetPluginConnection::takeReceiveCompletions(bool* moved) {
  for (;;) {
    Slot& s = recv_.at(nextRecvDone_);
    if (s.state != Slot::State::Posted) return;
    bool done = false;
    size_t bytes = 0;
    if (Status st = plugin_.test(s.request, &done, &bytes); !st.ok()) {
      recv_.failure = broken(st);
      return;
    }
    if (!done) return;
    s.request = nullptr;
    s.size = bytes;
    s.state = Slot::State::Filled;
    ++nextRecvDone_;
    *moved = true;
  }
}

Status NetPluginConnection::deliver(Slot& slot) {
  if (slot.size < sizeof(PieceHeader) || slot.size > slotBytes_) {
    return internalError(fmt::format("rank {}: a piece of {} bytes from rank {} over {} cannot be HCL's", rank_,
                                     slot.size, peer_, description_));
  }
  PieceHeader header;
  std::memcpy(&header, slot.bytes, sizeof header);
  Transfer& t = *receives_.front();
  if (header.tag != t.tag || header.messageBytes != t.bytes) {
    return messageMismatch(rank_, peer_, header.tag, header.messageBytes, t.tag, t.bytes);
  }
  const size_t n = slot.size - sizeof header;
  const bool completes = t.progressed + n == t.bytes;
  if (t.progressed + n > t.bytes || completes != (header.last != 0)) {
    return internalError(fmt::format("rank {}: the pieces of a {}-byte message from rank {} over {} do not add up",
                                     rank_, t.bytes, peer_, description_));
  }
  if (n > 0) std::memcpy(static_cast<uint8_t*>(t.buffer) + t.progressed, slot.bytes + sizeof header, n);
  t.progressed += n;
  if (completes) {
    receives_.pop_front();
    t.complete(Transfer::State::Done);
  }
  return {};
}

// The plugin failed a transfer: the peer or the network is gone.
Status NetPluginConnection::broken(const Status& why) const {
  return remoteError(fmt::format("rank {}: link to rank {} over {} failed: {}", rank_, peer_, description_,
                                 why.message()));
}

Status NetPluginConnection::fail(Status why) {
  failed_ = std::move(why);
  for (auto* queue : {&toCut_, &awaiting_, &receives_}) {
    for (Transfer* t : *queue) t->complete(Transfer::State::Failed);
    queue->clear();
  }
  return failed_;
}

void NetPluginConnection::abortBecause(const Status& why) {
  std::lock_guard lock(mutex_);
  if (watch_) watch_->abort(why.message());
  closed_ = true;
  toCut_.clear();
  awaiting_.clear();
  receives_.clear();
  release();  // the peer's plugin sees the comms close
}

namespace {

// Buffers a plugin may still write into: a comm closed (or refused to
// close) with requests posted, after an abort or a failure. Kept for the
// process's lifetime, as the plugins themselves are.
void keepForever(PageBuffer buffer) {
  static std::mutex mutex;
  static auto& kept = *std::make_unique<std::vector<PageBuffer>>().release();
  std::lock_guard lock(mutex);
  kept.push_back(std::move(buffer));
}

}  // namespace

// Errors on the way down are not reported: the link is being dropped.
void NetPluginConnection::release() {
  // Where a close cancels what is posted, the comms go first, and a buffer
  // is kept only if its comm would not close.
  const bool cancels = plugin_.closeCancelsRequests();
  const bool cancelled = cancels && closeComms();
  for (auto [d, comm] : {std::pair{&send_, sendComm_}, std::pair{&recv_, recvComm_}}) {
    const bool inFlight = std::any_of(std::begin(d->slots), std::end(d->slots),
                                      [](const Slot& s) { return s.state == Slot::State::Posted; });
    // With a request posted the registration stays (some plugins refuse to
    // drop it then) and so does the memory behind it; so it does where the
    // registration cannot be dropped.
    const bool untouched = cancels ? cancelled : !inFlight;
    if (d->mhandle && !(untouched && plugin_.deregister(comm, d->mhandle).ok())) keepForever(std::move(d->buffer));
    d->mhandle = nullptr;
    for (Slot& s : d->slots) {
      s.request = nullptr;
      s.bytes = nullptr;
      s.state = Slot::State::Free;
    }
  }
  closeComms();
}

// True when both comms closed without an error (or were closed before).
bool NetPluginConnection::closeComms() {
  bool clean = true;
  if (sendComm_) clean &= plugin_.closeSend(sendComm_).ok();
  if (recvComm_) clean &= plugin_.closeRecv(recvComm_).ok();
  sendComm_ = nullptr;
  recvComm_ = nullptr;
  return clean;
}

}  // namespace hcl::netplugin
