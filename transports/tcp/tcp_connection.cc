#include "transports/tcp/tcp_connection.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "transports/tcp/tcp_stripe.h"

namespace hcl::tcp {

TcpConnection::TcpConnection(int rank, int peer, std::shared_ptr<asio::io_context> io,
                             std::vector<std::unique_ptr<TcpStream>> streams)
    : rank_(rank), peer_(peer), io_(std::move(io)), streams_(std::move(streams)) {}

Status TcpConnection::post(Transfer& transfer) {
  if (aborted_.load(std::memory_order_acquire)) {
    transfer.complete(Transfer::State::Failed);
    return abortedStatus();
  }
  if (!failure_.ok()) {
    transfer.complete(Transfer::State::Failed);
    return failure_;
  }
  const int streams = static_cast<int>(streams_.size());
  // Who sends this message decides its streams: the lower rank's messages
  // take the even-numbered ones.
  const bool fromLower = transfer.isSend ? rank_ < peer_ : peer_ < rank_;
  const int pieces = pieceCount(transfer.bytes, directionStreamCount(streams, fromLower));
  if (pieces == 1) {
    TcpStream& stream = *streams_[static_cast<size_t>(directionStream(streams, fromLower, 0))];
    if (transfer.isSend)
      stream.postSend(transfer);
    else
      stream.postRecv(transfer);
    return {};
  }
  transfer.progressed = 0;
  const size_t frameBytes = static_cast<size_t>(pieces) * kFrameHeaderBytes + transfer.bytes;
  for (int i = 0; i < pieces; ++i) {
    const Piece piece = pieceOf(transfer.bytes, pieces, i);
    streams_[static_cast<size_t>(directionStream(streams, fromLower, i))]->postPiece(
        transfer, piece.offset, piece.bytes, pieceFlags(i, pieces), frameBytes);
  }
  return {};
}

// After abort() the queued transfers are the caller's again (it may have
// freed them): nothing is read into them, and they are not marked either.
Status TcpConnection::progress(bool* madeProgress) {
  if (aborted_.load(std::memory_order_acquire)) return abortedStatus();
  if (!failure_.ok()) return failure_;
  for (auto& stream : streams_) {
    Status status = stream->progress(madeProgress);
    if (!status.ok()) return fail(peersNoticeOr(std::move(status)));
  }
  return {};
}

// A peer that aborts writes its notice only on the streams where it was
// between frames; the stream that failed here may not be one of them, and
// resetting the others would drop the notice they hold.
Status TcpConnection::peersNoticeOr(Status status) {
  if (status.code() != hclRemoteError || streams_.size() < 2) return status;
  for (auto& stream : streams_) {
    if (std::optional<Status> notice = stream->pendingAbortNotice()) return *std::move(notice);
  }
  return status;
}

Status TcpConnection::abortedStatus() const {
  return remoteError(fmt::format("rank {}: connection to rank {} ({}) was aborted", rank_, peer_, describe()));
}

Status TcpConnection::fail(Status status) {
  if (aborted_.load(std::memory_order_acquire)) status = abortedStatus();
  // Tell the peer at once, and why, instead of letting it wait for messages
  // that will not come.
  sendAbortNotices(status.message());
  failure_ = std::move(status);
  for (auto& stream : streams_) {
    stream->reset();
    stream->failAll();
  }
  return failure_;
}

void TcpConnection::abortBecause(const Status& why) {
  if (!why.ok()) sendAbortNotices(why.message());
  abort();
}

void TcpConnection::abortOnPurpose() {
  sendAbortNotices({});
  abort();
}

// A reset drops what is still unsent, so the notices get a moment to go
// out first (waiting for the peer's acknowledgement would wait out its
// delayed ACK). Only where a stream had nothing unsent before its notice:
// otherwise the peer is not reading, and would not read the notice before
// the reset either.
void TcpConnection::sendAbortNotices(std::string_view why) {
  // The first only: fail()'s, or that of the abort that follows it.
  if (aborted_.load(std::memory_order_acquire) || noticeSent_.exchange(true)) return;
  std::vector<TcpStream*> awaited;
  for (auto& stream : streams_) {
    const bool idle = stream->unsentBytes() == 0;
    if (stream->sendAbortNotice(why) && idle) awaited.push_back(stream.get());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  while (!awaited.empty() && std::chrono::steady_clock::now() < deadline) {
    std::erase_if(awaited, [](TcpStream* s) { return s->unsentBytes() == 0 || s->brokenOff(); });
    if (!awaited.empty()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void TcpConnection::abort() {
  aborted_.store(true, std::memory_order_release);
  for (auto& stream : streams_) stream->reset();
}

std::string TcpConnection::describe() const {
  if (streams_.size() == 1) return streams_.front()->description();
  return fmt::format("{}, {} streams", streams_.front()->description(), streams_.size());
}

}  // namespace hcl::tcp
