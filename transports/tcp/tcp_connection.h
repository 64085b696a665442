// A Connection over one or more TcpStreams to one peer, with the stream
// layout of tcp_stripe.h: with several streams each direction has its own,
// and large messages are cut into pieces over them. post() and progress()
// must not run concurrently; abort() and abortBecause() may be called from
// any thread.
#pragma once

#include <asio/io_context.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "transports/tcp/tcp_stream.h"
#include "transports/transport.h"

namespace hcl::tcp {

class TcpConnection final : public Connection {
 public:
  // `io` owns the reactor the streams' sockets were created on. Both ends
  // must pass the same number of streams, in the same order.
  TcpConnection(int rank, int peer, std::shared_ptr<asio::io_context> io,
                std::vector<std::unique_ptr<TcpStream>> streams);

  Status post(Transfer& transfer) override;
  Status progress(bool* madeProgress) override;
  void abort() override;
  // Writes `why` to the peer in a notice on each stream where no frame is
  // half sent (tcp_abort_notice.h) and waits briefly for it to leave the
  // socket, then aborts.
  void abortBecause(const Status& why) override;
  // The same with a notice of no text: the peer reports that this rank
  // aborted, not that the link was reset.
  void abortOnPurpose() override;
  std::string describe() const override;

 private:
  Status fail(Status status);
  Status peersNoticeOr(Status status);
  void sendAbortNotices(std::string_view why);
  Status abortedStatus() const;

  int rank_;
  int peer_;
  std::shared_ptr<asio::io_context> io_;  // declared first: outlives the sockets
  std::vector<std::unique_ptr<TcpStream>> streams_;
  Status failure_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> noticeSent_{false};
};

}  // namespace hcl::tcp
