// One TCP socket carrying framed messages to one peer, driven by non-blocking
// reads and writes. Sends and receives queue independently; bytes are read
// only into posted receives, so an unread message waits in the kernel.
#pragma once

#include <asio/buffer.hpp>
#include <asio/ip/tcp.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "transports/tcp/tcp_frame_queue.h"
#include "transports/transport.h"

namespace hcl::tcp {

class TcpStream {
 public:
  // Caps the bytes moved per direction in one progress() call, so a call
  // stays short and the caller can serve its other connections.
  static constexpr size_t kMaxBytesPerProgress = size_t{4} << 20;

  // `socket` must be connected and past the hello exchange.
  TcpStream(int rank, int peer, asio::ip::tcp::socket socket, std::string description);

  void postSend(Transfer& transfer) {
    const std::lock_guard lock(sendSide_);
    sends_.push(transfer);
  }
  void postRecv(Transfer& transfer) { recvs_.push(transfer); }
  // One piece of a striped transfer (FrameQueue::pushPiece).
  void postPiece(Transfer& transfer, size_t offset, size_t bytes, uint32_t flags,
                 size_t transferFrameBytes) {
    if (!transfer.isSend) {
      recvs_.pushPiece(transfer, offset, bytes, flags, transferFrameBytes);
      return;
    }
    const std::lock_guard lock(sendSide_);
    sends_.pushPiece(transfer, offset, bytes, flags, transferFrameBytes);
  }

  // Moves bytes in both directions; returns the first failure.
  Status progress(bool* madeProgress);
  // Completes every queued transfer Failed.
  void failAll();
  // Resets the connection (RST, where a shutdown sends FIN): the peer's
  // next write fails at once, and its reads once it has taken what was sent
  // before, so a peer that arrives late at a call this rank gave up on
  // fails instead of completing it with the data already sent. Safe to
  // call from another thread while progress() runs.
  void reset();

  // Writes an abort notice carrying `why` (tcp_abort_notice.h), without
  // blocking, where no frame is half sent; true when all of it went into
  // the socket. Safe from another thread: where the send side is busy
  // there, it writes nothing.
  bool sendAbortNotice(std::string_view why);
  // Bytes written into the socket that have not gone out on the wire yet.
  size_t unsentBytes() const;
  // The socket has an error or the peer hung up.
  bool brokenOff() const;
  // Where no receive is half read and the peer's abort notice waits to be
  // read (behind whole unread frames, within 64 KiB), what it says.
  std::optional<Status> pendingAbortNotice();

  const std::string& description() const { return description_; }

 private:
  Status progressSends(bool* madeProgress);
  Status progressRecvs(bool* madeProgress);
  // `readBytes`: what the read that completed the header moved;
  // `afterHeader`: how many of them came after it.
  Status checkHeader(const PendingFrame& frame, size_t readBytes, size_t afterHeader);
  // A notice's text that starts `from` bytes into the last read: what the
  // read put into iov_, then the rest from the socket.
  std::string noticeText(size_t from, size_t readBytes, size_t textBytes);
  // With sends stuck and no receive posted nothing reads the socket; poll it
  // so that a peer that went away is still noticed.
  Status checkPeerStillThere();
  // The failure of the socket, or, where the peer wrote a notice before it
  // reset the link and the notice waits to be read, what the notice says.
  Status linkFailure(const asio::error_code& ec, const char* doing);
  // `doing`: what failed ("sending", "receiving", ...), for the message.
  Status socketFailure(const asio::error_code& ec, const char* doing) const;

  int rank_;
  int peer_;
  asio::ip::tcp::socket socket_;
  int fd_;  // for reset() from other threads
  std::string description_;
  // The send queue, and writes to the socket: a notice from another thread
  // takes turns with the frames, so it never lands inside one.
  std::mutex sendSide_;
  FrameQueue sends_;
  FrameQueue recvs_;
  std::vector<asio::mutable_buffer> iov_;
};

}  // namespace hcl::tcp
