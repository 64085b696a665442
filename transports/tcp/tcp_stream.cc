#include "transports/tcp/tcp_stream.h"

#include <fmt/format.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio/error.hpp>
#include <cerrno>
#include <chrono>

#include "transports/abort_reason.h"
#include "transports/tcp/tcp_abort_notice.h"
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
  const std::lock_guard lock(sendSide_);
  size_t moved = 0;
  while (!sends_.empty() && moved < kMaxBytesPerProgress) {
    sends_.gather(iov_, kMaxBytesPerProgress - moved);
    const size_t wanted = asio::buffer_size(iov_);
    asio::error_code ec;
    const size_t n = socket_.write_some(iov_, ec);
    if (ec == asio::error::would_block) return recvs_.empty() ? checkPeerStillThere() : Status{};
    if (ec == asio::error::interrupted) continue;  // a signal arrived first; nothing was sent
    if (ec) return linkFailure(ec, "sending");
    if (n > 0 && madeProgress) *madeProgress = true;
    moved += n;
    HCL_TRY(sends_.advance(n, [](const PendingFrame&, size_t) { return Status{}; }));
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
    if (ec) return linkFailure(ec, "receiving");
    if (n > 0 && madeProgress) *madeProgress = true;
    moved += n;
    HCL_TRY(recvs_.advance(
        n, [this, n](const PendingFrame& frame, size_t afterHeader) { return checkHeader(frame, n, afterHeader); }));
    if (n < wanted) break;  // nothing more has arrived
  }
  return {};
}

Status TcpStream::checkHeader(const PendingFrame& frame, size_t readBytes, size_t afterHeader) {
  const FrameHeader header = decodeFrameHeader(frame.header);
  if (isAbortNotice(header)) {
    return peerAbortedWith(rank_, peer_, description_,
                           noticeText(readBytes - afterHeader, readBytes, static_cast<size_t>(header.bytes)));
  }
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

// The read went on into the receive's buffer and the frames queued after
// it; the text is taken from there before anything else reads the socket.
std::string TcpStream::noticeText(size_t from, size_t readBytes, size_t textBytes) {
  std::string text;
  const size_t end = std::min(readBytes, from + textBytes);
  size_t at = 0;  // where iov_[i] starts in the read
  for (const asio::mutable_buffer& buffer : iov_) {
    if (at >= end) break;
    const size_t lo = std::max(at, from);
    const size_t hi = std::min(at + buffer.size(), end);
    if (lo < hi) text.append(static_cast<const char*>(buffer.data()) + (lo - at), hi - lo);
    at += buffer.size();
  }
  // The peer wrote the notice whole before its reset: the rest is there or
  // about to be.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  char chunk[kMostAbortReasonBytes];
  while (text.size() < textBytes) {
    const ssize_t n = ::recv(fd_, chunk, std::min(sizeof chunk, textBytes - text.size()), MSG_DONTWAIT);
    if (n > 0) {
      text.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  return text;
}

bool TcpStream::sendAbortNotice(std::string_view why) {
  const std::unique_lock lock(sendSide_, std::try_to_lock);
  if (!lock.owns_lock() || !sends_.betweenFrames()) return false;
  const std::vector<uint8_t> notice = encodeAbortNotice(why);
  const ssize_t n = ::send(fd_, notice.data(), notice.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  return n == static_cast<ssize_t>(notice.size());
}

size_t TcpStream::unsentBytes() const {
  int bytes = 0;
  if (::ioctl(fd_, SIOCOUTQNSD, &bytes) != 0) return 0;
  return static_cast<size_t>(std::max(bytes, 0));
}

// Data the peer sent before its notice may wait unread in front of it (no
// receive was posted for it): whole frames of it are stepped over, up to
// what one peek holds.
std::optional<Status> TcpStream::pendingAbortNotice() {
  if (!recvs_.betweenFrames()) return std::nullopt;
  constexpr size_t kMostPeekBytes = size_t{64} << 10;
  std::vector<uint8_t> pending(kMostPeekBytes);
  const ssize_t n = ::recv(fd_, pending.data(), pending.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return std::nullopt;
  std::optional<std::string> why = findAbortNotice({pending.data(), static_cast<size_t>(n)});
  if (!why) return std::nullopt;
  return peerAbortedWith(rank_, peer_, description_, *why);
}

Status TcpStream::linkFailure(const asio::error_code& ec, const char* doing) {
  if (std::optional<Status> notice = pendingAbortNotice()) return *std::move(notice);
  return socketFailure(ec, doing);
}

bool TcpStream::brokenOff() const {
  pollfd p{fd_, 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
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
      return linkFailure(asio::error_code(error, asio::system_category()), "waiting to send");
    }
  }
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return linkFailure(asio::error::eof, "waiting to send");
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
  {
    const std::lock_guard lock(sendSide_);
    sends_.failAll();
  }
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
