// Moving messages: sizes, both directions at once, FIFO order, tag/size checks.
#include "tcp_mesh_support.h"

namespace hcl::test {
namespace {

class TcpMessagingTest : public TcpTest, public ::testing::WithParamInterface<int> {};

TEST_P(TcpMessagingTest, ExchangesMessagesOfManySizesWithEveryPeerAtOnce) {
  const int n = GetParam();
  const std::vector<size_t> sizes = {0, 1, 7, (size_t{1} << 20) + 3};
  MeshSpec mesh(n);
  runMesh(mesh, [&](int rank, RankSide& side, std::barrier<>&) {
    Traffic traffic;
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      Connection* c = side.connections[static_cast<size_t>(p)].get();
      for (int i = 0; i < static_cast<int>(sizes.size()); ++i) {
        const size_t bytes = sizes[static_cast<size_t>(i)];
        ASSERT_TRUE(traffic.sendPattern(c, rank, p, i, bytes, static_cast<uint32_t>(i)).ok());
      }
      for (int i = 0; i < static_cast<int>(sizes.size()); ++i) {
        const size_t bytes = sizes[static_cast<size_t>(i)];
        ASSERT_TRUE(traffic.receivePattern(c, p, rank, i, bytes, static_cast<uint32_t>(i)).ok());
      }
    }
    const Status status = traffic.wait();
    ASSERT_TRUE(status.ok()) << status.message();
    for (const Transfer* t : traffic.transfers()) EXPECT_FALSE(t->failed());
    traffic.expectPatterns();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpMessagingTest, ::testing::Values(2, 3, 4));

TEST_F(TcpTest, ManySmallMessagesArriveInFifoOrder) {
  constexpr int kMessages = 3000;
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& peer, std::barrier<>&) {
    Connection* c = peer.get();
    std::vector<uint64_t> out(kMessages), in(kMessages, ~0ull);
    Traffic traffic;
    for (int i = 0; i < kMessages; ++i) {
      out[static_cast<size_t>(i)] = static_cast<uint64_t>(rank) << 32 | static_cast<uint64_t>(i);
      const auto tag = static_cast<uint32_t>(i % 5);
      ASSERT_TRUE(traffic.send(c, &out[static_cast<size_t>(i)], 8, tag).ok());
      ASSERT_TRUE(traffic.receive(c, &in[static_cast<size_t>(i)], 8, tag).ok());
      if (i % 100 == 0) {  // interleave posting with progress
        bool madeProgress = false;
        ASSERT_TRUE(c->progress(&madeProgress).ok());
      }
    }
    const Status status = traffic.wait();
    ASSERT_TRUE(status.ok()) << status.message();
    for (int i = 0; i < kMessages; ++i)
      ASSERT_EQ(in[static_cast<size_t>(i)],
                static_cast<uint64_t>(1 - rank) << 32 | static_cast<uint64_t>(i));
  });
}

// Rank 0 sends {tag 1, 8 bytes}; rank 1 expects something else.
void expectMismatch(uint32_t recvTag, size_t recvBytes, const std::string& expectedText) {
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& peer, std::barrier<>&) {
    Connection* c = peer.get();
    std::vector<uint8_t> data(64, 5);
    if (rank == 0) {
      Transfer send, laterRecv;
      send.buffer = data.data(), send.bytes = 8, send.tag = 1;
      laterRecv.isSend = false, laterRecv.buffer = data.data(), laterRecv.bytes = 8,
      laterRecv.tag = 2;
      ASSERT_TRUE(c->post(send).ok());
      ASSERT_TRUE(c->post(laterRecv).ok());
      // Rank 1 drops the link after the mismatch; our pending receive learns of it.
      const Status status = waitAll({c}, {&send, &laterRecv});
      EXPECT_EQ(status.code(), hclRemoteError) << status.message();
      EXPECT_TRUE(laterRecv.failed());
    } else {
      Transfer recv;
      recv.isSend = false, recv.buffer = data.data(), recv.bytes = recvBytes, recv.tag = recvTag;
      ASSERT_TRUE(c->post(recv).ok());
      const Status status = waitAll({c}, {&recv});
      EXPECT_EQ(status.code(), hclInvalidUsage) << status.message();
      EXPECT_NE(
          status.message().find("rank 1: message from rank 0 has tag 0x00000001/8 bytes, " + expectedText),
          std::string::npos)
          << status.message();
      EXPECT_TRUE(recv.failed());
      // The connection stays failed.
      Transfer later;
      later.buffer = data.data(), later.bytes = 1;
      EXPECT_EQ(c->post(later).code(), hclInvalidUsage);
      EXPECT_TRUE(later.failed());
      bool madeProgress = false;
      EXPECT_EQ(c->progress(&madeProgress).code(), hclInvalidUsage);
    }
  });
}

TEST_F(TcpTest, TagMismatchIsInvalidUsage) { expectMismatch(2, 8, "expected tag 0x00000002/8 bytes"); }

TEST_F(TcpTest, SizeMismatchIsInvalidUsage) { expectMismatch(1, 16, "expected tag 0x00000001/16 bytes"); }

TEST_F(TcpTest, ShorterMessageThanPostedIsInvalidUsage) {
  expectMismatch(1, 4, "expected tag 0x00000001/4 bytes");
}

}  // namespace
}  // namespace hcl::test
