// One TCP socket carrying framed messages to one peer, driven by non-blocking
// reads and writes. Sends and receives queue independently; bytes are read
// only into posted receives, so an unread message waits in the kernel.
#pragma once

#include <asio/buffer.hpp>
#include <asio/ip/tcp.hpp>
#include <string>
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

  void postSend(Transfer& transfer) { sends_.push(transfer); }
  void postRecv(Transfer& transfer) { recvs_.push(transfer); }
  // One piece of a striped transfer (FrameQueue::pushPiece).
  void postPiece(Transfer& transfer, size_t offset, size_t bytes, uint32_t flags,
                 size_t transferFrameBytes) {
    (transfer.isSend ? sends_ : recvs_)
        .pushPiece(transfer, offset, bytes, flags, transferFrameBytes);
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

  const std::string& description() const { return description_; }

 private:
  Status progressSends(bool* madeProgress);
  Status progressRecvs(bool* madeProgress);
  Status checkHeader(const PendingFrame& frame) const;
  // With sends stuck and no receive posted nothing reads the socket; poll it
  // so that a peer that went away is still noticed.
  Status checkPeerStillThere();
  // `doing`: what failed ("sending", "receiving", ...), for the message.
  Status socketFailure(const asio::error_code& ec, const char* doing) const;

  int rank_;
  int peer_;
  asio::ip::tcp::socket socket_;
  int fd_;  // for reset() from other threads
  std::string description_;
  FrameQueue sends_;
  FrameQueue recvs_;
  std::vector<asio::mutable_buffer> iov_;
};

}  // namespace hcl::tcp
