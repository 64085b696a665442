// Connections over several streams: striped messages of odd sizes arrive
// whole and in order, the lower rank's stream count wins, mismatches are
// still errors, and a peer that goes away still fails the other side.
#include <memory>

#include "tcp_mesh_support.h"
#include "tests/unit/bootstrap/test_env.h"
#include "transports/tcp/tcp_transport.h"

namespace hcl::test {
namespace {

constexpr size_t kK = size_t{1} << 10;
constexpr size_t kM = size_t{1} << 20;

struct StreamCase {
  int ranks;
  int streams;
};

class TcpStreamsTest : public TcpTest, public ::testing::WithParamInterface<StreamCase> {};

// Every rank sends every peer a run of messages, small and striped ones
// interleaved, of sizes that do not divide evenly, and checks every byte.
TEST_P(TcpStreamsTest, StripedMessagesOfOddSizesArriveWholeAndInOrder) {
  const auto [n, streams] = GetParam();
  const std::vector<size_t> sizes = {0,          1,           64 * kK - 1, 128 * kK,
                                     3,          128 * kK + 3, 256 * kK + 4097,
                                     kM + 5,     7,           3 * kM + 12345, 64 * kK + 1,
                                     8 * kM + 13};
  MeshSpec mesh(n);
  mesh.streams.assign(static_cast<size_t>(n), streams);
  runMesh(mesh, [&](int rank, RankSide& side, std::barrier<>&) {
    Traffic traffic;
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      Connection* c = side.connections[static_cast<size_t>(p)].get();
      EXPECT_NE(c->describe().find(std::to_string(streams) + " streams"), std::string::npos)
          << c->describe();
      // Receives first on odd ranks, sends first on even ones: posting order
      // between the two directions must not matter.
      for (int pass = 0; pass < 2; ++pass) {
        const bool sends = (pass == 0) == (rank % 2 == 0);
        for (int i = 0; i < static_cast<int>(sizes.size()); ++i) {
          const size_t bytes = sizes[static_cast<size_t>(i)];
          const auto tag = static_cast<uint32_t>(100 + i);
          const Status posted = sends ? traffic.sendPattern(c, rank, p, i, bytes, tag)
                                      : traffic.receivePattern(c, p, rank, i, bytes, tag);
          ASSERT_TRUE(posted.ok());
        }
      }
    }
    const Status status = traffic.wait();
    ASSERT_TRUE(status.ok()) << status.message();
    for (const Transfer* t : traffic.transfers()) EXPECT_FALSE(t->failed());
    traffic.expectPatterns();
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, TcpStreamsTest,
                         ::testing::Values(StreamCase{2, 2}, StreamCase{2, 3}, StreamCase{2, 4},
                                           StreamCase{2, 9}, StreamCase{3, 4}),
                         [](const auto& info) {
                           return std::to_string(info.param.ranks) + "ranks" +
                                  std::to_string(info.param.streams) + "streams";
                         });

// HCL_TCP_STREAMS, or else NCCL's socket settings multiplied, capped at 64.
TEST(TcpStreamsWanted, OwnSettingOrNcclsSocketsPerConnection) {
  ScopedEnv streams("HCL_TCP_STREAMS", std::nullopt), threads("NCCL_SOCKET_NTHREADS", std::nullopt),
      socks("NCCL_NSOCKS_PERTHREAD", std::nullopt), ownThreads("HCL_SOCKET_NTHREADS", std::nullopt),
      ownSocks("HCL_NSOCKS_PERTHREAD", std::nullopt);
  EXPECT_EQ(tcpStreamsWanted(), 1);
  ::setenv("NCCL_SOCKET_NTHREADS", "4", 1);
  EXPECT_EQ(tcpStreamsWanted(), 4);
  ::setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  EXPECT_EQ(tcpStreamsWanted(), 8);
  ::setenv("NCCL_SOCKET_NTHREADS", "16", 1);
  ::setenv("NCCL_NSOCKS_PERTHREAD", "16", 1);
  EXPECT_EQ(tcpStreamsWanted(), 64) << "NCCL caps a connection's sockets at 64 too";
  ::setenv("NCCL_SOCKET_NTHREADS", "32", 1);
  ::setenv("NCCL_NSOCKS_PERTHREAD", "1", 1);
  EXPECT_EQ(tcpStreamsWanted(), 16) << "threads beyond NCCL's 16 are 16, with a warning, as in NCCL";
  ::setenv("NCCL_NSOCKS_PERTHREAD", "8", 1);
  EXPECT_EQ(tcpStreamsWanted(), 64) << "16 threads x 8, capped";
  ::setenv("NCCL_SOCKET_NTHREADS", "0", 1);
  ::setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  EXPECT_EQ(tcpStreamsWanted(), 2) << "no threads is out of range: the default 1, with a warning";
  ::setenv("HCL_TCP_STREAMS", "3", 1);
  EXPECT_EQ(tcpStreamsWanted(), 3) << "HCL's own setting wins";
}

// The lower rank chooses: rank 0 asks for 3 streams, rank 1 for 1 (and rank
// 1 for 2 towards rank 2, which asks for 5); every pair ends up with the
// lower rank's count on both ends and moves striped data.
TEST_F(TcpTest, TheLowerRankChoosesTheStreamCount) {
  MeshSpec mesh(3);
  mesh.streams = {3, 2, 5};
  runMesh(mesh, [&](int rank, RankSide& side, std::barrier<>&) {
    Traffic traffic;
    for (int p = 0; p < 3; ++p) {
      if (p == rank) continue;
      Connection* c = side.connections[static_cast<size_t>(p)].get();
      const int expected = mesh.streams[static_cast<size_t>(std::min(rank, p))];
      EXPECT_NE(c->describe().find(", " + std::to_string(expected) + " streams"),
                std::string::npos)
          << "rank " << rank << " peer " << p << ": " << c->describe();
      const size_t bytes = 2 * kM + 1;
      ASSERT_TRUE(traffic.sendPattern(c, rank, p, 0, bytes, 0).ok());
      ASSERT_TRUE(traffic.receivePattern(c, p, rank, 0, bytes, 0).ok());
    }
    const Status status = traffic.wait();
    ASSERT_TRUE(status.ok()) << status.message();
    traffic.expectPatterns();
  });
}

// Rank 0 sends `sent` bytes; rank 1 posts a receive of `expected` bytes.
// Whether either or both are striped, rank 1 reports the mismatch.
void expectStripedMismatch(size_t sent, size_t expected) {
  MeshSpec mesh(2);
  mesh.streams = {4, 4};
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& peer, std::barrier<>&) {
    Connection* c = peer.get();
    std::vector<uint8_t> data(std::max(sent, expected), 1);
    if (rank == 0) {
      Transfer send;
      send.buffer = data.data(), send.bytes = sent, send.tag = 1;
      ASSERT_TRUE(c->post(send).ok());
      // Rank 1 drops the link after the mismatch; unless everything was
      // sent already, we see it fail.
      const Status status = waitAll({c}, {&send});
      if (!status.ok()) {
        EXPECT_EQ(status.code(), hclRemoteError) << status.message();
      }
    } else {
      Transfer recv;
      recv.isSend = false, recv.buffer = data.data(), recv.bytes = expected, recv.tag = 1;
      ASSERT_TRUE(c->post(recv).ok());
      const Status status = waitAll({c}, {&recv});
      EXPECT_EQ(status.code(), hclInvalidUsage) << status.message();
      EXPECT_NE(status.message().find("rank 1: message from rank 0 has tag 0x00000001/" +
                                      std::to_string(sent) + " bytes, expected tag 0x00000001/" +
                                      std::to_string(expected) + " bytes"),
                std::string::npos)
          << status.message();
      EXPECT_TRUE(recv.failed());
    }
  });
}

TEST_F(TcpTest, StripedSizeMismatchIsInvalidUsage) { expectStripedMismatch(kM, 2 * kM + 3); }

TEST_F(TcpTest, WholeMessageWhereAStripedOneIsExpectedIsInvalidUsage) {
  expectStripedMismatch(100, kM);
}

TEST_F(TcpTest, StripedMessageWhereAWholeOneIsExpectedIsInvalidUsage) {
  expectStripedMismatch(kM, 100);
}

// A striped message is under way when the receiver goes away: the sender
// fails (error, not a hang), and so does a receiver whose sender goes away.
TEST_F(TcpTest, PeerLeavingMidStripedMessageFailsTheOtherSide) {
  constexpr size_t kBig = size_t{64} << 20;  // far beyond the socket buffers
  for (int leaver : {0, 1}) {
    MeshSpec mesh(2);
    mesh.streams = {4, 4};
    runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>&) {
      auto data = std::make_unique_for_overwrite<uint8_t[]>(kBig);
      Transfer t;
      t.isSend = rank == 0;
      t.buffer = data.get(), t.bytes = kBig, t.tag = 6;
      ASSERT_TRUE(conn->post(t).ok());
      if (rank == leaver) {
        while (t.progressed == 0) {  // until part of the message has moved
          bool madeProgress = false;
          ASSERT_TRUE(conn->progress(&madeProgress).ok());
        }
        EXPECT_FALSE(t.done());
        conn->abort();
        conn.reset();
      } else {
        const Status status = waitAll({conn.get()}, {&t});
        EXPECT_EQ(status.code(), hclRemoteError) << status.message();
        EXPECT_TRUE(t.failed());
      }
    });
  }
}

}  // namespace
}  // namespace hcl::test
