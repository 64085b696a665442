// The FIFO of frames waiting on one direction of a TCP stream. A frame is a
// header and a payload: a whole transfer, or one piece of a transfer striped
// over several streams (tcp_stripe.h). Each frame counts its own moved bytes
// and adds them to Transfer::progressed, which thus counts the frame bytes
// moved for the transfer over all its streams; the transfer completes Done
// when that reaches the frame bytes of all its pieces. Several frames can be
// moved by one writev/readv.
#pragma once

#include <algorithm>
#include <asio/buffer.hpp>
#include <cstddef>
#include <deque>
#include <vector>

#include "core/status.h"
#include "transports/tcp/tcp_frame.h"
#include "transports/transport.h"

namespace hcl::tcp {

struct PendingFrame {
  Transfer* transfer = nullptr;
  char* data = nullptr;  // this frame's part of the transfer's buffer
  size_t bytes = 0;      // payload bytes of this frame
  size_t moved = 0;      // frame bytes (header included) moved so far
  uint32_t flags = 0;    // sent, or expected in the received header
  size_t transferFrameBytes = 0;  // frame bytes of all the transfer's pieces
  FrameHeaderBytes header{};  // encoded for sends; filled by the socket for receives
  size_t frameBytes() const { return kFrameHeaderBytes + bytes; }
};

class FrameQueue {
 public:
  // Asio passes at most this many buffers to one system call.
  static constexpr size_t kMaxBuffers = 64;

  // Queues `transfer` whole (and resets transfer.progressed).
  void push(Transfer& transfer);
  // Queues one piece, framed with header flags `flags`: `bytes` at `offset`
  // of the transfer's buffer. `transferFrameBytes` is the frame bytes of all its pieces; the
  // caller resets transfer.progressed before queueing the first piece.
  void pushPiece(Transfer& transfer, size_t offset, size_t bytes, uint32_t flags,
                 size_t transferFrameBytes);

  // Fills `iov` with the not yet moved bytes of the queued frames, in order,
  // at most maxBytes in total.
  void gather(std::vector<asio::mutable_buffer>& iov, size_t maxBytes);

  bool empty() const { return frames_.empty(); }
  // No frame is partly moved: the next byte on the wire starts a frame.
  bool betweenFrames() const { return frames_.empty() || frames_.front().moved == 0; }

  // Credits `moved` bytes to the queued frames in order. onHeader(frame,
  // afterHeader) runs once a frame's header is complete, before the frame
  // can complete; afterHeader is how many of the `moved` bytes came after
  // the header's end. A failure it returns stops the crediting. A transfer
  // whose frames have all finished completes Done.
  template <typename OnHeader>
  Status advance(size_t moved, OnHeader&& onHeader) {
    while (moved > 0 && !frames_.empty()) {
      PendingFrame& frame = frames_.front();
      Transfer& transfer = *frame.transfer;
      const size_t take = std::min(moved, frame.frameBytes() - frame.moved);
      const bool headerWasIncomplete = frame.moved < kFrameHeaderBytes;
      frame.moved += take;
      transfer.progressed += take;
      moved -= take;
      if (headerWasIncomplete && frame.moved >= kFrameHeaderBytes) {
        HCL_TRY(onHeader(frame, frame.moved - kFrameHeaderBytes + moved));
      }
      if (frame.moved == frame.frameBytes()) {
        const size_t total = frame.transferFrameBytes;
        frames_.pop_front();
        if (transfer.progressed == total) transfer.complete(Transfer::State::Done);
      }
    }
    return {};
  }

  // Completes every queued transfer Failed and empties the queue.
  void failAll();

 private:
  std::deque<PendingFrame> frames_;
};

}  // namespace hcl::tcp
