// A rank that aborts a TCP link for a failure writes the failure's text in a
// notice frame before its reset; the peer quotes it, whether a receive of
// any size was waiting or the failure was its own message (a sender stuck
// behind unread data: tcp_failure_test.cc).
#include <memory>
#include <string>
#include <vector>

#include "tcp_mesh_support.h"
#include "transports/abort_reason.h"
#include "transports/tcp/tcp_abort_notice.h"
#include "transports/tcp/tcp_frame_queue.h"
#include "transports/tcp/tcp_stripe.h"

namespace hcl::test {
namespace {

using tcp::encodeAbortNotice;
using tcp::findAbortNotice;

std::vector<uint8_t> messageFrame(uint32_t tag, uint32_t flags, uint64_t headerBytes, size_t payload) {
  const tcp::FrameHeaderBytes header = tcp::encodeFrameHeader({tag, flags, headerBytes});
  std::vector<uint8_t> frame(header.begin(), header.end());
  frame.resize(frame.size() + payload, 0x5a);
  return frame;
}

void append(std::vector<uint8_t>& to, const std::vector<uint8_t>& bytes) { to.insert(to.end(), bytes.begin(), bytes.end()); }

TEST(TcpAbortNotice, RoundTripsAndStepsOverWholeFramesBeforeIt) {
  const std::vector<uint8_t> notice = encodeAbortNotice("rank 3: connection to rank 2 closed");
  EXPECT_EQ(findAbortNotice(notice), "rank 3: connection to rank 2 closed");

  // A whole message and a striped message's second piece of three (its
  // header gives the whole message's 300 KiB) sit unread in front of it.
  const size_t whole = size_t{300} << 10;
  std::vector<uint8_t> pending = messageFrame(7, 0, 100, 100);
  append(pending, messageFrame(8, tcp::pieceFlags(1, 3), whole, tcp::pieceOf(whole, 3, 1).bytes));
  append(pending, notice);
  EXPECT_EQ(findAbortNotice(pending), "rank 3: connection to rank 2 closed");
}

TEST(TcpAbortNotice, FindsNothingWhereFramesDoNotFitOrNoNoticeFollows) {
  std::vector<uint8_t> pending = messageFrame(7, 0, 100, 100);
  EXPECT_EQ(findAbortNotice(pending), std::nullopt);
  // A message larger than what was peeked hides whatever follows it.
  pending = messageFrame(7, 0, 1000, 100);
  append(pending, encodeAbortNotice("why"));
  EXPECT_EQ(findAbortNotice(pending), std::nullopt);
  // Piece flags no layout has.
  pending = messageFrame(7, tcp::pieceFlags(5, 3), 1000, 0);
  append(pending, encodeAbortNotice("why"));
  EXPECT_EQ(findAbortNotice(pending), std::nullopt);
  // A message's header whose tag happens to be the notice's is a message,
  // stepped over to the notice behind it.
  pending = messageFrame(tcp::kAbortNoticeTag, 0, 4, 4);
  EXPECT_EQ(findAbortNotice(pending), std::nullopt);
  append(pending, encodeAbortNotice("behind it"));
  EXPECT_EQ(findAbortNotice(pending), "behind it");
}

TEST(TcpAbortNotice, ATruncatedNoticeGivesWhatArrivedAndALongTextKeepsBothEnds) {
  std::vector<uint8_t> notice = encodeAbortNotice("rank 1: the first cause");
  notice.resize(notice.size() - 6);
  EXPECT_EQ(findAbortNotice(notice), "rank 1: the first");

  const std::string longWhy = "rank 0: start " + std::string(3000, 'x') + " rank 9: the first cause";
  notice = encodeAbortNotice(longWhy);
  EXPECT_EQ(notice.size(), tcp::kFrameHeaderBytes + kMostAbortReasonBytes);
  const std::optional<std::string> text = findAbortNotice(notice);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->rfind("rank 0: start", 0), 0u) << *text;
  EXPECT_NE(text->find(" ... "), std::string::npos);
  EXPECT_TRUE(text->ends_with("rank 9: the first cause")) << *text;
}

TEST(TcpAbortNotice, FramesAreBetweenFramesOnlyBeforeOrAfterAWholeFrame) {
  std::vector<uint8_t> a(100);
  Transfer t;
  t.buffer = a.data(), t.bytes = a.size(), t.tag = 1;
  tcp::FrameQueue queue;
  EXPECT_TRUE(queue.betweenFrames());
  queue.push(t);
  EXPECT_TRUE(queue.betweenFrames());
  ASSERT_TRUE(queue.advance(10, [](const tcp::PendingFrame&, size_t) { return Status{}; }).ok());
  EXPECT_FALSE(queue.betweenFrames());
  ASSERT_TRUE(queue.advance(tcp::kFrameHeaderBytes + 90, [](const tcp::PendingFrame&, size_t) { return Status{}; }).ok());
  EXPECT_TRUE(queue.betweenFrames());
  EXPECT_TRUE(t.done());
}

// onHeader learns how many of the credited bytes follow the header, which
// is where a notice's text starts in the read.
TEST(TcpAbortNotice, TheHeaderCheckLearnsWhatFollowsTheHeader) {
  std::vector<uint8_t> a(8), b(100);
  Transfer ta, tb;
  ta.isSend = tb.isSend = false;
  ta.buffer = a.data(), ta.bytes = a.size();
  tb.buffer = b.data(), tb.bytes = b.size();
  tcp::FrameQueue queue;
  queue.push(ta);
  queue.push(tb);
  std::vector<size_t> seen;
  const auto record = [&](const tcp::PendingFrame&, size_t afterHeader) {
    seen.push_back(afterHeader);
    return Status{};
  };
  ASSERT_TRUE(queue.advance(5, record).ok());                                 // part of a's header
  ASSERT_TRUE(queue.advance(11 + 8 + tcp::kFrameHeaderBytes + 30, record).ok());  // the rest of a, b's header, 30 of b
  EXPECT_EQ(seen, (std::vector<size_t>{8 + tcp::kFrameHeaderBytes + 30, 30}));
}

const std::string kCause = "rank 1: " + std::string(600, 'c') + " the cause";

struct ReceiveCase {
  int streams;
  size_t receiveBytes;
};

class TcpAbortNoticeReceiveTest : public TcpTest, public ::testing::WithParamInterface<ReceiveCase> {};

// The notice lands in a waiting receive's frame; its text is longer than
// a small receive's buffer, so the rest is read from the socket.
TEST_P(TcpAbortNoticeReceiveTest, AWaitingReceiveQuotesThePeersCause) {
  const auto [streams, receiveBytes] = GetParam();
  MeshSpec mesh(2);
  mesh.streams = {streams, streams};
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    if (rank == 0) {
      std::vector<uint8_t> buffer(receiveBytes);
      Transfer recv;
      recv.isSend = false, recv.buffer = buffer.data(), recv.bytes = buffer.size(), recv.tag = 3;
      ASSERT_TRUE(conn->post(recv).ok());
      barrier.arrive_and_wait();
      const Status status = waitAll({conn.get()}, {&recv});
      EXPECT_EQ(status.code(), hclRemoteError);
      EXPECT_NE(status.message().find("rank 0: rank 1 (tcp "), std::string::npos) << status.message();
      EXPECT_TRUE(status.message().ends_with(") aborted, failing: " + kCause)) << status.message();
      EXPECT_TRUE(recv.failed());
    } else {
      barrier.arrive_and_wait();
      conn->abortBecause(remoteError(kCause));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Receives, TcpAbortNoticeReceiveTest,
                         ::testing::Values(ReceiveCase{1, 8}, ReceiveCase{1, 64 << 10}, ReceiveCase{4, 8},
                                           ReceiveCase{4, 1 << 20}),
                         [](const auto& info) {
                           return std::to_string(info.param.streams) + "streams_" +
                                  std::to_string(info.param.receiveBytes) + "bytes";
                         });

// The read that brings the notice's header goes on into the receives
// queued behind it (their headers and buffers): the text is taken back
// from all of them, whole.
TEST_F(TcpTest, ATextThatRunsIntoLaterReceivesIsTakenBackWhole) {
  MeshSpec mesh(2);
  mesh.streams = {1, 1};
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    if (rank == 0) {
      Traffic traffic;
      std::vector<std::vector<uint8_t>> buffers;
      for (size_t bytes : {size_t{8}, size_t{0}, size_t{24}, size_t{4096}}) {
        buffers.emplace_back(bytes);
        ASSERT_TRUE(traffic.receive(conn.get(), buffers.back().data(), bytes, 3).ok());
      }
      barrier.arrive_and_wait();
      barrier.arrive_and_wait();  // the notice is in the socket before the first read
      const Status status = traffic.wait();
      EXPECT_EQ(status.code(), hclRemoteError);
      EXPECT_TRUE(status.message().ends_with(") aborted, failing: " + kCause)) << status.message();
    } else {
      barrier.arrive_and_wait();
      conn->abortBecause(remoteError(kCause));
      barrier.arrive_and_wait();
    }
  });
}

// Over several streams a peer that aborts mid-frame on the streams of a
// striped message leaves its notice on the others only; the stream reset
// under a receive here finds it there.
TEST_F(TcpTest, ANoticeOnAnotherStreamIsQuotedWhenTheReceivingOneIsReset) {
  constexpr size_t kLarge = size_t{64} << 20;
  MeshSpec mesh(2);
  mesh.streams = {4, 4};
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    auto data = std::make_unique_for_overwrite<uint8_t[]>(kLarge);
    Transfer t;
    t.isSend = rank == 1, t.buffer = data.get(), t.bytes = kLarge, t.tag = 3;
    ASSERT_TRUE(conn->post(t).ok());
    if (rank == 0) {
      barrier.arrive_and_wait();  // rank 1 is half way through its pieces
      barrier.arrive_and_wait();  // and has aborted
      const Status status = waitAll({conn.get()}, {&t});
      EXPECT_EQ(status.code(), hclRemoteError);
      EXPECT_TRUE(status.message().ends_with(") aborted, failing: " + kCause)) << status.message();
    } else {
      for (int idle = 0; idle < 2000;) {  // until the socket buffers are full
        bool madeProgress = false;
        ASSERT_TRUE(conn->progress(&madeProgress).ok());
        idle = madeProgress ? 0 : idle + 1;
      }
      EXPECT_FALSE(t.done());
      barrier.arrive_and_wait();
      conn->abortBecause(remoteError(kCause));
      barrier.arrive_and_wait();
    }
  });
}

// An abort of the rank's own choice (hclCommAbort) leaves a notice of no
// text: the peer says that the rank aborted, not that the link broke.
TEST_F(TcpTest, AnAbortOnPurposeReadsAsAnAbortNotAReset) {
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    if (rank == 0) {
      uint8_t buffer[64];
      Transfer recv;
      recv.isSend = false, recv.buffer = buffer, recv.bytes = sizeof buffer, recv.tag = 3;
      ASSERT_TRUE(conn->post(recv).ok());
      barrier.arrive_and_wait();
      const Status status = waitAll({conn.get()}, {&recv});
      EXPECT_EQ(status.code(), hclRemoteError);
      EXPECT_NE(status.message().find("rank 0: rank 1 (tcp "), std::string::npos) << status.message();
      EXPECT_TRUE(status.message().ends_with(") aborted")) << status.message();
    } else {
      barrier.arrive_and_wait();
      conn->abortOnPurpose();
    }
  });
}

// A rank that finds a peer's message is not the one it expects tells the
// peer why as it resets the link.
TEST_F(TcpTest, AMismatchIsQuotedToThePeerThatSentIt) {
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>&) {
    uint8_t bytes[16] = {};
    Transfer first;
    first.isSend = rank == 1, first.buffer = bytes, first.bytes = sizeof bytes, first.tag = rank == 1 ? 4 : 3;
    ASSERT_TRUE(conn->post(first).ok());
    if (rank == 0) {
      const Status status = waitAll({conn.get()}, {&first});
      EXPECT_EQ(status.code(), hclInvalidUsage) << status.message();
      return;
    }
    EXPECT_TRUE(waitAll({conn.get()}, {&first}).ok());
    uint8_t reply[16];
    Transfer recv;
    recv.isSend = false, recv.buffer = reply, recv.bytes = sizeof reply, recv.tag = 6;
    ASSERT_TRUE(conn->post(recv).ok());
    const Status status = waitAll({conn.get()}, {&recv});
    EXPECT_EQ(status.code(), hclRemoteError);
    EXPECT_NE(status.message().find("rank 1: rank 0 (tcp "), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("aborted, failing: rank 0: message from rank 1 has tag 0x00000004"),
              std::string::npos)
        << status.message();
  });
}

}  // namespace
}  // namespace hcl::test
