#include "transports/tcp/tcp_connection.h"

#include <fmt/format.h>

namespace hcl::tcp {

TcpConnection::TcpConnection(int rank, int peer, std::shared_ptr<asio::io_context> io,
                             std::vector<std::unique_ptr<TcpStream>> streams)
    : rank_(rank), peer_(peer), io_(std::move(io)), streams_(std::move(streams)) {}

Status TcpConnection::post(Transfer& transfer) {
  if (!failure_.ok()) {
    transfer.complete(Transfer::State::Failed);
    return failure_;
  }
  TcpStream& stream = *streams_.front();
  if (transfer.isSend)
    stream.postSend(transfer);
  else
    stream.postRecv(transfer);
  return {};
}

Status TcpConnection::progress(bool* madeProgress) {
  if (!failure_.ok()) return failure_;
  for (auto& stream : streams_) {
    Status status = stream->progress(madeProgress);
    if (!status.ok()) return fail(std::move(status));
  }
  return {};
}

Status TcpConnection::fail(Status status) {
  if (aborted_.load(std::memory_order_acquire))
    status = remoteError(
        fmt::format("rank {}: connection to rank {} ({}) was aborted", rank_, peer_, describe()));
  failure_ = std::move(status);
  // Tell the peer at once instead of letting it wait for messages that will not come.
  for (auto& stream : streams_) {
    stream->shutdown();
    stream->failAll();
  }
  return failure_;
}

void TcpConnection::abort() {
  aborted_.store(true, std::memory_order_release);
  for (auto& stream : streams_) stream->shutdown();
}

std::string TcpConnection::describe() const { return streams_.front()->description(); }

}  // namespace hcl::tcp
