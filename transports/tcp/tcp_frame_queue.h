// The FIFO of transfers waiting on one direction of a TCP stream. Each queued
// transfer is one frame (header + payload); Transfer::progressed counts the
// frame bytes already moved. Several frames can be moved by one writev/readv.
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
  FrameHeaderBytes header{};  // encoded for sends; filled by the socket for receives
  size_t frameBytes() const { return kFrameHeaderBytes + transfer->bytes; }
};

class FrameQueue {
 public:
  // Asio passes at most this many buffers to one system call.
  static constexpr size_t kMaxBuffers = 64;

  void push(Transfer& transfer);
  bool empty() const { return frames_.empty(); }

  // Fills `iov` with the not yet moved bytes of the queued frames, in order,
  // at most maxBytes in total.
  void gather(std::vector<asio::mutable_buffer>& iov, size_t maxBytes);

  // Credits `moved` bytes to the queued frames in order. onHeader(frame) runs
  // once a frame's header is complete, before the frame can complete; a
  // failure it returns stops the crediting. Finished frames complete Done.
  template <typename OnHeader>
  Status advance(size_t moved, OnHeader&& onHeader) {
    while (moved > 0 && !frames_.empty()) {
      PendingFrame& frame = frames_.front();
      Transfer& transfer = *frame.transfer;
      const size_t take = std::min(moved, frame.frameBytes() - transfer.progressed);
      const bool headerWasIncomplete = transfer.progressed < kFrameHeaderBytes;
      transfer.progressed += take;
      moved -= take;
      if (headerWasIncomplete && transfer.progressed >= kFrameHeaderBytes) HCL_TRY(onHeader(frame));
      if (transfer.progressed == frame.frameBytes()) {
        frames_.pop_front();
        transfer.complete(Transfer::State::Done);
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
