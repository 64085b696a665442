// Stream layout and piece arithmetic, congestion control choice, which
// accept errors are retried, self-connected sockets, and the frame queue with pieces, without a mesh.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <cerrno>
#include <asio/ip/tcp.hpp>
#include <set>
#include <vector>

#include "core/netif.h"
#include "core/socket_fd.h"
#include "transports/tcp/tcp_frame_queue.h"
#include "transports/tcp/tcp_hello.h"
#include "transports/tcp/tcp_socket_util.h"
#include "transports/tcp/tcp_stream.h"
#include "transports/tcp/tcp_stripe.h"

namespace hcl::tcp {
namespace {

std::vector<int> directionStreams(int streams, bool fromLower) {
  std::vector<int> out;
  for (int i = 0; i < directionStreamCount(streams, fromLower); ++i)
    out.push_back(directionStream(streams, fromLower, i));
  return out;
}

TEST(TcpStripe, OneStreamCarriesBothDirections) {
  EXPECT_EQ(directionStreams(1, true), std::vector<int>{0});
  EXPECT_EQ(directionStreams(1, false), std::vector<int>{0});
}

TEST(TcpStripe, SeveralStreamsGiveEachDirectionItsOwn) {
  EXPECT_EQ(directionStreams(2, true), std::vector<int>{0});
  EXPECT_EQ(directionStreams(2, false), std::vector<int>{1});
  EXPECT_EQ(directionStreams(5, true), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(directionStreams(5, false), (std::vector<int>{1, 3}));
  for (int k = 2; k <= kMaxStreams; ++k) {
    std::set<int> all;
    for (bool lower : {true, false})
      for (int s : directionStreams(k, lower)) {
        EXPECT_GE(s, 0);
        EXPECT_LT(s, k);
        EXPECT_TRUE(all.insert(s).second) << "stream " << s << " used twice with " << k;
      }
    EXPECT_EQ(static_cast<int>(all.size()), k);
  }
}

TEST(TcpStripe, PieceCountFollowsSizeAndStreams) {
  EXPECT_EQ(pieceCount(0, 4), 1);
  EXPECT_EQ(pieceCount(1, 4), 1);
  EXPECT_EQ(pieceCount(2 * kMinPieceBytes - 1, 4), 1);
  EXPECT_EQ(pieceCount(2 * kMinPieceBytes, 4), 2);
  EXPECT_EQ(pieceCount(3 * kMinPieceBytes + 5, 4), 3);
  EXPECT_EQ(pieceCount(size_t{1} << 30, 4), 4);
  EXPECT_EQ(pieceCount(size_t{1} << 30, 1), 1);
  EXPECT_EQ(pieceCount(size_t{1} << 30, 0), 1);
}

TEST(TcpStripe, PiecesTileTheMessageWithAlignedBoundaries) {
  const std::vector<size_t> sizes = {0,
                                     1,
                                     4095,
                                     2 * kMinPieceBytes,
                                     2 * kMinPieceBytes + 1,
                                     3 * kMinPieceBytes + 4095,
                                     (size_t{1} << 20) + 3,
                                     (size_t{7} << 20) + 4097,
                                     (size_t{64} << 20) - 1};
  for (size_t bytes : sizes) {
    for (int streams = 1; streams <= 9; ++streams) {
      const int pieces = pieceCount(bytes, streams);
      size_t next = 0;
      for (int i = 0; i < pieces; ++i) {
        const Piece p = pieceOf(bytes, pieces, i);
        EXPECT_EQ(p.offset, next) << bytes << " bytes, piece " << i << " of " << pieces;
        EXPECT_EQ(p.offset % kPieceAlign, 0u) << bytes << " bytes, piece " << i;
        if (pieces > 1) {
          EXPECT_GE(p.bytes, kMinPieceBytes - kPieceAlign);
        }
        next = p.offset + p.bytes;
      }
      EXPECT_EQ(next, bytes) << bytes << " bytes over " << streams << " streams";
    }
  }
}

TEST(TcpStripe, PieceFlagsRoundTripAndAreZeroForWholeMessages) {
  EXPECT_EQ(pieceFlags(0, 1), 0u);
  for (int pieces : {2, 3, kMaxStreams})
    for (int i = 0; i < pieces; ++i) {
      const uint32_t flags = pieceFlags(i, pieces);
      EXPECT_NE(flags, 0u);
      EXPECT_EQ(pieceIndexOf(flags), i);
      EXPECT_EQ(pieceCountOf(flags), pieces);
    }
}

TEST(TcpHelloStreams, StreamFieldsRoundTripAndAreChecked) {
  TransportContext ctx;
  ctx.rank = 1;
  ctx.nranks = 2;
  const Hello hello = makeHello(ctx, 1, 2, 3);
  const Hello back = decodeHello(encodeHello(hello));
  EXPECT_EQ(back.streamIndex, 2);
  EXPECT_EQ(back.streamCount, 3);
  EXPECT_EQ(helloMismatch(back, ctx), "");

  Hello outside = hello;
  outside.streamIndex = 3;
  EXPECT_EQ(helloMismatch(outside, ctx), "stream 3 of 3");
  Hello none = hello;
  none.streamCount = 0;
  none.streamIndex = 0;
  EXPECT_EQ(helloMismatch(none, ctx), "stream 0 of 0");
  Hello tooMany = hello;
  tooMany.streamCount = kMaxStreams + 1;
  EXPECT_NE(helloMismatch(tooMany, ctx), "");
}

// One transfer cut into two pieces on two queues completes only when both
// have moved, whatever the order.
TEST(TcpFrameQueuePieces, TransferCompletesWhenAllItsPiecesHaveMoved) {
  std::vector<uint8_t> data(300, 7);
  Transfer t;
  t.buffer = data.data();
  t.bytes = data.size();
  t.tag = 5;
  const size_t frameBytes = 2 * kFrameHeaderBytes + t.bytes;
  FrameQueue a, b;
  t.progressed = 0;
  a.pushPiece(t, 0, 100, pieceFlags(0, 2), frameBytes);
  b.pushPiece(t, 100, 200, pieceFlags(1, 2), frameBytes);

  std::vector<asio::mutable_buffer> iov;
  b.gather(iov, 1000);
  ASSERT_EQ(iov.size(), 2u);
  EXPECT_EQ(iov[1].data(), data.data() + 100);
  EXPECT_EQ(iov[1].size(), 200u);
  const FrameHeader header =
      decodeFrameHeader(*static_cast<const FrameHeaderBytes*>(iov[0].data()));
  EXPECT_EQ(header.bytes, 300u);  // the whole message's size
  EXPECT_EQ(header.flags, pieceFlags(1, 2));

  auto ok = [](const PendingFrame&, size_t) { return Status{}; };
  ASSERT_TRUE(b.advance(kFrameHeaderBytes + 200, ok).ok());
  EXPECT_TRUE(b.empty());
  EXPECT_FALSE(t.done());
  ASSERT_TRUE(a.advance(kFrameHeaderBytes + 99, ok).ok());
  EXPECT_FALSE(t.done());
  ASSERT_TRUE(a.advance(1, ok).ok());
  EXPECT_TRUE(t.done());
  EXPECT_FALSE(t.failed());
  EXPECT_EQ(t.progressed, frameBytes);
}

// Two ends that cut the same message differently (which the hello rules
// out) are told apart from a size mismatch: the header carries the piece.
TEST(TcpStreamPieces, APieceWhereAWholeMessageIsExpectedIsAnInternalError) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  TcpStream sender(0, 1, std::move(a), "test sender");
  TcpStream receiver(1, 0, std::move(b), "test receiver");

  std::vector<uint8_t> out(4 * kMinPieceBytes, 1), in(out.size(), 0);
  Transfer send, recv;
  send.buffer = out.data(), send.bytes = out.size(), send.tag = 3;
  recv.isSend = false, recv.buffer = in.data(), recv.bytes = in.size(), recv.tag = 3;
  send.progressed = 0;
  sender.postPiece(send, 0, out.size() / 2, pieceFlags(0, 2), 2 * kFrameHeaderBytes + out.size());
  receiver.postRecv(recv);
  Status status;
  for (int i = 0; i < 100000 && status.ok() && !recv.done(); ++i) {
    bool madeProgress = false;
    ASSERT_TRUE(sender.progress(&madeProgress).ok());
    status = receiver.progress(&madeProgress);
  }
  EXPECT_EQ(status.code(), hclInternalError) << status.message();
  EXPECT_NE(status.message().find("arrived as piece 1 of 2, expected piece 1 of 1"),
            std::string::npos)
      << status.message();
}

TEST(TcpCongestion, AutoPicksANonPacingAlgorithmWithinTheHostOnly) {
  EXPECT_EQ(congestionCandidates("auto", true), (std::vector<std::string>{"cubic", "reno"}));
  EXPECT_EQ(congestionCandidates("", true), (std::vector<std::string>{"cubic", "reno"}));
  EXPECT_TRUE(congestionCandidates("auto", false).empty());
  EXPECT_TRUE(congestionCandidates("system", true).empty());
  EXPECT_TRUE(congestionCandidates("system", false).empty());
  EXPECT_EQ(congestionCandidates("reno", false), std::vector<std::string>{"reno"});
  EXPECT_TRUE(congestionIsAuto("auto"));
  EXPECT_TRUE(congestionIsAuto(""));
  EXPECT_FALSE(congestionIsAuto("system"));
  // Keywords and names in any case, with spaces around them.
  EXPECT_TRUE(congestionIsAuto(" AUTO "));
  EXPECT_TRUE(congestionCandidates("System", true).empty());
  EXPECT_EQ(congestionCandidates(" Reno\t", false), std::vector<std::string>{"reno"});
}

// accept(2): the network errors of one pending connection are retried; a
// broken listener or a lack of descriptors is not.
TEST(TcpAccept, ErrorsOfOnePendingConnectionAreRetried) {
  for (int e : {ENETDOWN, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH, ECONNABORTED,
                EINTR}) {
    EXPECT_TRUE(acceptErrorIsTransient(asio::error_code(e, asio::error::get_system_category()))) << e;
  }
  for (int e : {EBADF, EINVAL, EMFILE, ENFILE, ENOTSOCK}) {
    EXPECT_FALSE(acceptErrorIsTransient(asio::error_code(e, asio::error::get_system_category()))) << e;
  }
  EXPECT_FALSE(acceptErrorIsTransient(asio::error::eof)) << "not a system error";
}

TEST(TcpCongestion, LoopbackAndOwnAddressesAreThisHost) {
  const std::vector<NetInterface> interfaces = listInterfaces();
  EXPECT_TRUE(isThisHostAddress(asio::ip::make_address("127.0.0.1"), {}));
  EXPECT_TRUE(isThisHostAddress(asio::ip::make_address("::1"), {}));
  for (const NetInterface& itf : interfaces) {
    EXPECT_TRUE(isThisHostAddress(asio::ip::make_address(itf.ip), interfaces))
        << itf.name << " " << itf.ip;
  }
  NetInterface other;
  other.name = "test0";
  other.ip = "198.51.100.77";
  EXPECT_TRUE(isThisHostAddress(asio::ip::make_address("198.51.100.77"), {other}));
  EXPECT_FALSE(isThisHostAddress(asio::ip::make_address("198.51.100.78"), {other}));

  // Both ends of a loopback connection are on this host.
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  EXPECT_TRUE(isSameHostConnection(a, {}));
  EXPECT_TRUE(isSameHostConnection(b, {}));
  asio::ip::tcp::socket unconnected(io);
  EXPECT_FALSE(isSameHostConnection(unconnected, interfaces));
}

// A socket bound to a loopback port and connected to that same port ends up
// connected to itself (TCP's simultaneous open); a socket connected to a
// listener does not.
TEST(TcpSocketUtil, TellsASocketConnectedToItself) {
  asio::io_context io;
  asio::ip::tcp::socket self(io);
  self.open(asio::ip::tcp::v4());
  self.bind({asio::ip::make_address("127.0.0.1"), 0});
  asio::error_code ec;
  self.connect(self.local_endpoint(), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(isConnectedToItself(self));

  asio::ip::tcp::acceptor listener(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket client(io);
  client.connect(listener.local_endpoint());
  EXPECT_FALSE(isConnectedToItself(client));
  asio::ip::tcp::socket unconnected(io);
  EXPECT_FALSE(isConnectedToItself(unconnected));
}

TEST(TcpCongestion, AppliesTheFirstAlgorithmTheKernelAccepts) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.open(asio::ip::tcp::v4());
  const int fd = socket.native_handle();
  EXPECT_FALSE(congestionInUse(fd).empty());
  std::string refused;
  // reno is built into every kernel and open to every process.
  EXPECT_TRUE(applyCongestionControl(fd, {"no-such-algorithm", "reno"}, &refused));
  EXPECT_EQ(congestionInUse(fd), "reno");
  EXPECT_NE(refused.find("no-such-algorithm: "), std::string::npos) << refused;
  refused.clear();
  EXPECT_FALSE(applyCongestionControl(fd, {"no-such-algorithm"}, &refused));
  EXPECT_EQ(congestionInUse(fd), "reno");
  EXPECT_TRUE(applyCongestionControl(fd, {}));
}

}  // namespace
}  // namespace hcl::tcp
