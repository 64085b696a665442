#include "transports/tcp/tcp_stream.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/error.hpp>

#include "transports/tcp/tcp_stripe.h"

namespace hcl::tcp {

TcpStream::TcpStream(int rank, int peer, asio::ip::tcp::socket socket, std::string description)
    : rank_(rank),
      peer_(peer),
      socket_(std::move(socket)),
      fd_(socket_.native_handle()),
      description_(std::move(description)) {
  asio::error_code ignored;
  socket_.non_blocking(true, ignored);
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  iov_.reserve(FrameQueue::kMaxBuffers);
}

Status TcpStream::progress(bool* madeProgress) {
  HCL_TRY(progressSends(madeProgress));
  return progressRecvs(madeProgress);
}

Status TcpStream::progressSends(bool* madeProgress) {
  size_t moved = 0;
  while (!sends_.empty() && moved < kMaxBytesPerProgress) {
    sends_.gather(iov_, kMaxBytesPerProgress - moved);
    const size_t wanted = asio::buffer_size(iov_);
    asio::error_code ec;
    const size_t n = socket_.write_some(iov_, ec);
    if (ec == asio::error::would_block) return recvs_.empty() ? checkPeerStillThere() : Status{};
    if (ec == asio::error::interrupted) continue;  // a signal arrived first; nothing was sent
    if (ec) return socketFailure(ec, "sending");
    if (n > 0 && madeProgress) *madeProgress = true;
    moved += n;
    HCL_TRY(sends_.advance(n, [](const PendingFrame&) { return Status{}; }));
    if (n < wanted) break;  // the socket buffer is full
  }
  return {};
}

Status TcpStream::progressRecvs(bool* madeProgress) {
  size_t moved = 0;
  while (!recvs_.empty() && moved < kMaxBytesPerProgress) {
    recvs_.gather(iov_, kMaxBytesPerProgress - moved);
    const size_t wanted = asio::buffer_size(iov_);
    asio::error_code ec;
    const size_t n = socket_.read_some(iov_, ec);
    if (ec == asio::error::would_block) break;
    if (ec == asio::error::interrupted) continue;  // a signal arrived first; nothing was received
    if (ec) return socketFailure(ec, "receiving");
    if (n > 0 && madeProgress) *madeProgress = true;
    moved += n;
    HCL_TRY(recvs_.advance(n, [this](const PendingFrame& frame) { return checkHeader(frame); }));
    if (n < wanted) break;  // nothing more has arrived
  }
  return {};
}

Status TcpStream::checkHeader(const PendingFrame& frame) const {
  const FrameHeader header = decodeFrameHeader(frame.header);
  const Transfer& expected = *frame.transfer;
  if (header.tag != expected.tag || header.bytes != expected.bytes) {
    return messageMismatch(rank_, peer_, header.tag, header.bytes, expected.tag, expected.bytes);
  }
  if (header.flags == frame.flags) return {};
  // Same message, cut differently: the two ends disagree on the stream layout.
  return internalError(fmt::format(
      "rank {}: message from rank {} ({}) arrived as piece {} of {}, expected piece {} of {}",
      rank_, peer_, description_, pieceIndexOf(header.flags) + 1, pieceCountOf(header.flags),
      pieceIndexOf(frame.flags) + 1, pieceCountOf(frame.flags)));
}

// Asked of poll(), not of a peek: data the peer sent before it shut the
// link down may still sit unread in front of its FIN, and a peek returns
// that data. HCL never half-closes a healthy link, so a hang-up here means
// the peer failed or aborted; with the window closed, no new data reaches
// it to draw a reset either.
Status TcpStream::checkPeerStillThere() {
  pollfd p{fd_, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) != 1) return {};
  if (p.revents & POLLERR) {
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error != 0) {
      return socketFailure(asio::error_code(error, asio::system_category()), "waiting to send");
    }
  }
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return socketFailure(asio::error::eof, "waiting to send");
  return {};
}

Status TcpStream::socketFailure(const asio::error_code& ec, const char* doing) const {
  if (ec == asio::error::eof)
    return remoteError(fmt::format("rank {}: connection to rank {} ({}) closed by peer while {}", rank_,
                                   peer_, description_, doing));
  if (ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
      ec == asio::error::connection_aborted)
    return remoteError(fmt::format("rank {}: connection to rank {} ({}) reset while {} ({})", rank_, peer_,
                                   description_, doing, ec.message()));
  return remoteError(fmt::format("rank {}: connection to rank {} ({}) failed while {}: {}", rank_, peer_,
                                 description_, doing, ec.message()));
}

void TcpStream::failAll() {
  sends_.failAll();
  recvs_.failAll();
}

void TcpStream::reset() {
  // connect() to AF_UNSPEC disconnects: from an established connection the
  // kernel sends a reset, and the descriptor stays valid for other threads.
  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  if (::connect(fd_, &unspec, sizeof unspec) != 0) ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace hcl::tcp
