// A peer that aborts or goes away mid-transfer fails the other side, no hang.
#include <algorithm>
#include <vector>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "tcp_mesh_support.h"

namespace hcl::test {
namespace {

constexpr size_t kBig = size_t{64} << 20;  // far beyond the socket buffers

enum class Departure { AbortKeepObject, AbortThenDestroy, Destroy };

class TcpPeerGoneTest : public TcpTest, public ::testing::WithParamInterface<Departure> {};

bool isSocketFailure(const Status& s) { return s.code() == hclRemoteError; }

// Rank 1 receives part of a big message from rank 0 and then goes away.
TEST_P(TcpPeerGoneTest, ReceiverLeavingFailsTheSender) {
  const Departure how = GetParam();
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    // Contents do not matter; skipping the fill keeps the test fast.
    auto data = std::make_unique_for_overwrite<uint8_t[]>(kBig);
    if (rank == 0) {
      Transfer send;
      send.buffer = data.get(), send.bytes = kBig, send.tag = 4;
      ASSERT_TRUE(conn->post(send).ok());
      barrier.arrive_and_wait();  // rank 1 leaves after this
      const Status status = waitAll({conn.get()}, {&send});
      EXPECT_TRUE(isSocketFailure(status)) << status.message();
      EXPECT_NE(status.message().find("rank 0: connection to rank 1 (tcp "), std::string::npos)
          << status.message();
      EXPECT_TRUE(send.failed());
    } else {
      barrier.arrive_and_wait();  // never receives: rank 0's data piles up unread
      if (how != Departure::Destroy) conn->abort();
      if (how != Departure::AbortKeepObject) conn.reset();
    }
    // runPair's closing barrier: rank 1 keeps its transport until rank 0 has seen the failure.
  });
}

// Rank 0 is sending a big message to rank 1 when rank 1 goes away.
TEST_P(TcpPeerGoneTest, SenderLeavingMidMessageFailsTheReceiver) {
  const Departure how = GetParam();
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    auto data = std::make_unique_for_overwrite<uint8_t[]>(kBig);
    if (rank == 0) {
      Transfer recv;
      recv.isSend = false, recv.buffer = data.get(), recv.bytes = kBig, recv.tag = 3;
      ASSERT_TRUE(conn->post(recv).ok());
      barrier.arrive_and_wait();
      const Status status = waitAll({conn.get()}, {&recv});
      EXPECT_TRUE(isSocketFailure(status)) << status.message();
      // An abort resets the connection; a destroy closes it.
      const char* words = how == Departure::Destroy ? "closed by peer while receiving" : "reset while receiving";
      EXPECT_NE(status.message().find(words), std::string::npos) << status.message();
      EXPECT_TRUE(recv.failed());
    } else {
      Transfer send;
      send.buffer = data.get(), send.bytes = kBig, send.tag = 3;
      ASSERT_TRUE(conn->post(send).ok());
      while (send.progressed == 0) {  // until part of the message is on the wire
        bool madeProgress = false;
        ASSERT_TRUE(conn->progress(&madeProgress).ok());
      }
      EXPECT_FALSE(send.done());
      barrier.arrive_and_wait();
      if (how != Departure::Destroy) conn->abort();
      if (how == Departure::AbortKeepObject) {
        // The queued send is the caller's again: progress() reports the
        // abort and leaves the transfer alone.
        bool madeProgress = false;
        const Status status = conn->progress(&madeProgress);
        EXPECT_EQ(status.code(), hclRemoteError);
        EXPECT_NE(status.message().find("aborted"), std::string::npos) << status.message();
        EXPECT_FALSE(send.done());
        EXPECT_FALSE(send.failed());
      } else {
        conn.reset();
      }
    }
  });
}

// With one socket per link, rank 0 is stuck sending on a full socket, with
// data rank 1 sent before it aborted unread in front of the reset (a peek
// returns that data, not the end of the stream); `abortIt` aborts rank 1's
// end. Returns what rank 0's wait reports.
Status blockedSenderSeesThePeerAbort(const std::function<void(Connection&)>& abortIt) {
  Status seen;
  MeshSpec mesh(2);
  mesh.streams = {1, 1};
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    if (rank == 0) {
      barrier.arrive_and_wait();  // rank 1's message is here, and stays unread
      auto data = std::make_unique_for_overwrite<uint8_t[]>(kBig);
      Transfer send;
      send.buffer = data.get(), send.bytes = kBig, send.tag = 5;
      ASSERT_TRUE(conn->post(send).ok());
      // Until both socket buffers are full: many rounds in a row move nothing.
      for (int idle = 0; idle < 2000;) {
        bool madeProgress = false;
        ASSERT_TRUE(conn->progress(&madeProgress).ok());
        idle = madeProgress ? 0 : idle + 1;
        if (!madeProgress) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      EXPECT_FALSE(send.done());
      barrier.arrive_and_wait();
      barrier.arrive_and_wait();  // rank 1 has aborted
      seen = waitAll({conn.get()}, {&send});
    } else {
      uint8_t early[64] = {};
      Transfer send;
      send.buffer = early, send.bytes = sizeof early, send.tag = 9;
      ASSERT_TRUE(conn->post(send).ok());
      EXPECT_TRUE(waitAll({conn.get()}, {&send}).ok());
      barrier.arrive_and_wait();
      barrier.arrive_and_wait();  // rank 0 is stuck sending
      abortIt(*conn);             // keeps the object, so its socket stays open
      barrier.arrive_and_wait();
    }
  });
  return seen;
}

TEST_F(TcpTest, BlockedSenderNoticesAnAbortBehindUnreadData) {
  const Status status = blockedSenderSeesThePeerAbort([](Connection& c) { c.abort(); });
  EXPECT_TRUE(isSocketFailure(status)) << status.message();
  EXPECT_NE(status.message().find("reset while"), std::string::npos) << status.message();
}

// An abort for a failure leaves a notice behind the unread data, which the
// blocked sender finds and quotes (tcp_abort_notice.h).
TEST_F(TcpTest, BlockedSenderQuotesANoticeBehindUnreadData) {
  const std::string cause = "rank 1: " + std::string(600, 'c') + " the cause";
  const Status status = blockedSenderSeesThePeerAbort([&](Connection& c) { c.abortBecause(remoteError(cause)); });
  EXPECT_TRUE(isSocketFailure(status)) << status.message();
  EXPECT_NE(status.message().find("rank 0: rank 1 (tcp "), std::string::npos) << status.message();
  EXPECT_TRUE(status.message().ends_with(") aborted, failing: " + cause)) << status.message();
}

// After abort() a receive whose data has already arrived is not completed:
// the connection no longer writes into the caller's buffer, which the
// caller may have freed.
TEST_F(TcpTest, AbortedConnectionWritesNoMoreIntoReceiveBuffers) {
  MeshSpec mesh(2);
  runPair(mesh, [&](int rank, std::unique_ptr<Connection>& conn, std::barrier<>& barrier) {
    std::vector<uint8_t> buffer(1024, rank == 1 ? 0x77 : 0x00);
    Transfer t;
    t.isSend = rank == 1;
    t.buffer = buffer.data(), t.bytes = buffer.size(), t.tag = 8;
    if (rank == 1) {
      ASSERT_TRUE(conn->post(t).ok());
      EXPECT_TRUE(waitAll({conn.get()}, {&t}).ok());
      barrier.arrive_and_wait();  // the data is in rank 0's socket
      barrier.arrive_and_wait();
    } else {
      barrier.arrive_and_wait();
      ASSERT_TRUE(conn->post(t).ok());
      conn->abort();
      for (int i = 0; i < 10; ++i) {
        bool madeProgress = false;
        const Status status = conn->progress(&madeProgress);
        EXPECT_EQ(status.code(), hclRemoteError);
        EXPECT_NE(status.message().find("was aborted"), std::string::npos) << status.message();
        EXPECT_FALSE(madeProgress);
      }
      EXPECT_FALSE(t.done());
      EXPECT_EQ(std::count(buffer.begin(), buffer.end(), 0x77), 0);
      Transfer late;
      late.isSend = true, late.buffer = buffer.data(), late.bytes = 8, late.tag = 9;
      EXPECT_EQ(conn->post(late).code(), hclRemoteError);
      EXPECT_TRUE(late.failed());
      barrier.arrive_and_wait();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Departures, TcpPeerGoneTest,
                         ::testing::Values(Departure::AbortKeepObject, Departure::AbortThenDestroy,
                                           Departure::Destroy),
                         [](const auto& info) {
                           switch (info.param) {
                             case Departure::AbortKeepObject:
                               return std::string("Abort");
                             case Departure::AbortThenDestroy:
                               return std::string("AbortThenDestroy");
                             case Departure::Destroy:
                               return std::string("Destroy");
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace hcl::test
