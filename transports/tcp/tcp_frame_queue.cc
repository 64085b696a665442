#include "transports/tcp/tcp_frame_queue.h"

namespace hcl::tcp {

void FrameQueue::push(Transfer& transfer) {
  transfer.progressed = 0;
  PendingFrame frame;
  frame.transfer = &transfer;
  if (transfer.isSend) frame.header = encodeFrameHeader({transfer.tag, 0, transfer.bytes});
  frames_.push_back(frame);
}

void FrameQueue::gather(std::vector<asio::mutable_buffer>& iov, size_t maxBytes) {
  iov.clear();
  size_t budget = maxBytes;
  for (PendingFrame& frame : frames_) {
    if (budget == 0 || iov.size() + 2 > kMaxBuffers) break;
    size_t offset = frame.transfer->progressed;
    if (offset < kFrameHeaderBytes) {
      const size_t n = std::min(kFrameHeaderBytes - offset, budget);
      iov.emplace_back(frame.header.data() + offset, n);
      budget -= n;
      offset += n;
      if (offset < kFrameHeaderBytes) break;
    }
    const size_t payloadOffset = offset - kFrameHeaderBytes;
    const size_t n = std::min(frame.transfer->bytes - payloadOffset, budget);
    if (n > 0) {
      iov.emplace_back(static_cast<char*>(frame.transfer->buffer) + payloadOffset, n);
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
