// Wire formats and frame bookkeeping, without sockets.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "transports/tcp/tcp_frame.h"
#include "transports/tcp/tcp_frame_queue.h"
#include "transports/tcp/tcp_hello.h"

namespace hcl::tcp {
namespace {

TEST(TcpFrame, HeaderIsLittleEndianAndRoundTrips) {
  const FrameHeader header{0x01020304u, 0u, 0x1122334455667788ull};
  const FrameHeaderBytes raw = encodeFrameHeader(header);
  EXPECT_EQ(raw[0], 0x04);
  EXPECT_EQ(raw[3], 0x01);
  EXPECT_EQ(raw[8], 0x88);
  EXPECT_EQ(raw[15], 0x11);
  const FrameHeader back = decodeFrameHeader(raw);
  EXPECT_EQ(back.tag, header.tag);
  EXPECT_EQ(back.flags, 0u);
  EXPECT_EQ(back.bytes, header.bytes);
}

TransportContext contextForRank(int rank) {
  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = 4;
  for (int i = 0; i < 16; ++i) ctx.secret[i] = static_cast<uint8_t>(i * 3);
  ctx.commTag = 77;
  return ctx;
}

TEST(TcpHello, RoundTripsAndIsAcceptedByItsAddressee) {
  const Hello hello = makeHello(contextForRank(1), 3);
  const Hello back = decodeHello(encodeHello(hello));
  EXPECT_EQ(back.fromRank, 1);
  EXPECT_EQ(back.toRank, 3);
  EXPECT_EQ(back.commTag, 77u);
  EXPECT_EQ(helloMismatch(back, contextForRank(3)), "");
}

TEST(TcpHello, NamesWhatIsWrong) {
  const TransportContext receiver = contextForRank(3);
  Hello hello = makeHello(contextForRank(1), 3);

  Hello badMagic = hello;
  badMagic.magic ^= 1;
  EXPECT_NE(helloMismatch(badMagic, receiver).find("magic"), std::string::npos);

  Hello badSecret = hello;
  badSecret.secret[5] ^= 0xff;
  EXPECT_EQ(helloMismatch(badSecret, receiver), "wrong secret");

  Hello badComm = hello;
  badComm.commTag = 78;
  EXPECT_NE(helloMismatch(badComm, receiver).find("communicator tag"), std::string::npos);

  EXPECT_NE(helloMismatch(hello, contextForRank(2)).find("addressed to rank 3"), std::string::npos);
}

TEST(TcpFrameQueue, GathersAcrossFramesAndCompletesInOrder) {
  std::vector<uint8_t> a(5, 1), b(0), c(40, 3);
  Transfer ta, tb, tc;
  ta.buffer = a.data(), ta.bytes = a.size(), ta.tag = 1;
  tb.buffer = nullptr, tb.bytes = 0, tb.tag = 2;
  tc.buffer = c.data(), tc.bytes = c.size(), tc.tag = 3;
  FrameQueue queue;
  queue.push(ta);
  queue.push(tb);
  queue.push(tc);

  std::vector<asio::mutable_buffer> iov;
  queue.gather(iov, 1000);
  ASSERT_EQ(iov.size(), 5u);  // header a, payload a, header b, header c, payload c
  EXPECT_EQ(asio::buffer_size(iov), 3 * kFrameHeaderBytes + 45);

  int headers = 0;
  auto countHeaders = [&](const PendingFrame&, size_t) {
    ++headers;
    return Status{};
  };
  // Part of a's header, then the rest of a and all of b, then part of c.
  ASSERT_TRUE(queue.advance(10, countHeaders).ok());
  EXPECT_FALSE(ta.done());
  EXPECT_EQ(headers, 0);
  ASSERT_TRUE(queue.advance(11 + 16 + 20, countHeaders).ok());
  EXPECT_TRUE(ta.done());
  EXPECT_TRUE(tb.done());
  EXPECT_FALSE(tc.done());
  EXPECT_EQ(headers, 3);

  queue.gather(iov, 1000);
  ASSERT_EQ(iov.size(), 1u);  // only c's remaining payload
  EXPECT_EQ(iov[0].data(), c.data() + 4);
  EXPECT_EQ(iov[0].size(), 36u);

  queue.gather(iov, 10);  // the byte budget truncates
  EXPECT_EQ(asio::buffer_size(iov), 10u);

  queue.failAll();
  EXPECT_TRUE(tc.failed());
  EXPECT_FALSE(ta.failed());
  EXPECT_TRUE(queue.empty());
}

TEST(TcpFrameQueue, HeaderCheckFailureStopsCrediting) {
  std::vector<uint8_t> a(8);
  Transfer t;
  t.isSend = false;
  t.buffer = a.data();
  t.bytes = a.size();
  FrameQueue queue;
  queue.push(t);
  const Status status =
      queue.advance(24, [](const PendingFrame&, size_t) { return invalidUsage("mismatch"); });
  EXPECT_EQ(status.code(), hclInvalidUsage);
  EXPECT_FALSE(t.done());
}

}  // namespace
}  // namespace hcl::tcp
