#include "transports/tcp/tcp_frame_queue.h"

namespace hcl::tcp {

void FrameQueue::push(Transfer& transfer) {
  transfer.progressed = 0;
  pushPiece(transfer, 0, transfer.bytes, 0, kFrameHeaderBytes + transfer.bytes);
}

void FrameQueue::pushPiece(Transfer& transfer, size_t offset, size_t bytes, uint32_t flags,
                           size_t transferFrameBytes) {
  PendingFrame frame;
  frame.transfer = &transfer;
  frame.data = static_cast<char*>(transfer.buffer) + offset;
  frame.bytes = bytes;
  frame.flags = flags;
  frame.transferFrameBytes = transferFrameBytes;
  if (transfer.isSend) frame.header = encodeFrameHeader({transfer.tag, flags, transfer.bytes});
  frames_.push_back(frame);
}

void FrameQueue::gather(std::vector<asio::mutable_buffer>& iov, size_t maxBytes) {
  iov.clear();
  size_t budget = maxBytes;
  for (PendingFrame& frame : frames_) {
    if (budget == 0 || iov.size() + 2 > kMaxBuffers) break;
    size_t offset = frame.moved;
    if (offset < kFrameHeaderBytes) {
      const size_t n = std::min(kFrameHeaderBytes - offset, budget);
      iov.emplace_back(frame.header.data() + offset, n);
      budget -= n;
      offset += n;
      if (offset < kFrameHeaderBytes) break;
    }
    const size_t payloadOffset = offset - kFrameHeaderBytes;
    const size_t n = std::min(frame.bytes - payloadOffset, budget);
    if (n > 0) {
      iov.emplace_back(frame.data + payloadOffset, n);
      budget -= n;
    }
  }
}

void FrameQueue::failAll() {
  while (!frames_.empty()) {
    Transfer* transfer = frames_.front().transfer;
    frames_.pop_front();
    transfer->complete(Transfer::State::Failed);
  }
}

}  // namespace hcl::tcp
