// Two NetPluginConnections in one process over the test plugin (loopback
// TCP, which refuses unregistered buffers, turns down every other send and
// accepts once per listener) in each ABI version, and over HCL's own verbs
// network on the fake verbs library (tests/ib): order, data, pieces, sizes,
// tags, and what a peer that goes away leaves.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <ostream>
#include <vector>

#include "tests/unit/bootstrap/test_env.h"
#include "tests/unit/transfer_pump.h"
#ifdef HCL_FAKE_VERBS_LIBRARY
#include "transports/ib/ib_net.h"
#endif
#include "transports/net_plugin/net_plugin.h"
#include "transports/net_plugin/net_plugin_abi.h"
#include "transports/net_plugin/net_plugin_connection.h"

namespace hcl::netplugin {
namespace {

constexpr size_t kSlotBytes = 4096 + sizeof(PieceHeader);

struct Network {
  const char* name;     // the test's name, and what failure texts name
  const char* library;  // a test plugin, or the fake verbs library for "verbs"
};

bool isVerbs(const Network& n) { return std::string(n.name) == "verbs"; }
void PrintTo(const Network& n, std::ostream* os) { *os << n.name; }

class NetPluginPair : public ::testing::TestWithParam<Network> {
 protected:
  void SetUp() override {
    std::string why;
    if (isVerbs(GetParam())) {
#ifdef HCL_FAKE_VERBS_LIBRARY
      ib::IbSettings settings;
      settings.library = GetParam().library;
      verbs_ = ib::IbNet::open(settings, &why);
      plugin_ = verbs_.get();
#endif
    } else {
      plugin_ = loadNetPlugin(std::string(HCL_TEST_NET_PLUGIN_DIR) + "/" + GetParam().library, &why);
    }
    ASSERT_NE(plugin_, nullptr) << why;
    int devices = 0;
    ASSERT_TRUE(plugin_->devices(&devices).ok());
    ASSERT_GT(devices, 0);
    // end[r] sends to 1-r over sendComm[r] and receives over recvComm[r].
    std::array<std::array<uint8_t, netabi::kHandleBytes>, 2> handle{};
    std::array<void*, 2> listenComm{}, sendComm{}, recvComm{};
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(plugin_->listen(r % devices, handle[static_cast<size_t>(r)].data(), &listenComm[static_cast<size_t>(r)]).ok());
#ifdef HCL_FAKE_VERBS_LIBRARY
      if (verbs_) {
        ASSERT_TRUE(ib::setHandleAddress(handle[static_cast<size_t>(r)].data(), "127.0.0.1"));
      }
#endif
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!(sendComm[0] && sendComm[1] && recvComm[0] && recvComm[1])) {
      ASSERT_LT(std::chrono::steady_clock::now(), end) << "connections not up after 10 s";
      for (size_t r = 0; r < 2; ++r) {
        if (!sendComm[r]) {
          const Status s = plugin_->connect(static_cast<int>(r) % devices, handle[1 - r].data(), &sendComm[r]);
          ASSERT_TRUE(s.ok()) << s.message();
        }
        if (!recvComm[r]) {
          const Status s = plugin_->accept(listenComm[r], &recvComm[r]);
          ASSERT_TRUE(s.ok()) << s.message();
        }
      }
    }
    if (!isVerbs(GetParam())) {
      void* again = nullptr;
      EXPECT_FALSE(plugin_->accept(listenComm[0], &again).ok()) << "the test plugin accepts once per listener";
    }
    for (size_t r = 0; r < 2; ++r) {
      ASSERT_TRUE(plugin_->closeListen(listenComm[r]).ok());
      end_[r] = std::make_unique<NetPluginConnection>(*plugin_, sendComm[r], recvComm[r], static_cast<int>(r),
                                                      static_cast<int>(1 - r), kSlotBytes, "test link");
      const Status s = end_[r]->open();
      ASSERT_TRUE(s.ok()) << s.message();
    }
  }

  Status pump(const std::vector<Transfer*>& transfers) {
    return hcl::testing::pumpTransfers(
        [&]() -> Status {
          for (auto& e : end_) {
            bool moved = false;
            if (e) HCL_TRY(e->progress(&moved));
          }
          return {};
        },
        transfers);
  }

  static void describe(Transfer& t, bool isSend, void* buffer, size_t bytes, uint32_t tag) {
    hcl::testing::describeTransfer(t, isSend, buffer, bytes, tag);
  }

  void postPair(int from, Transfer& send, std::vector<uint8_t>& sent, Transfer& recv, std::vector<uint8_t>& into,
                uint32_t sendTag, uint32_t recvTag) {
    describe(send, true, sent.data(), sent.size(), sendTag);
    describe(recv, false, into.data(), into.size(), recvTag);
    ASSERT_TRUE(end_[static_cast<size_t>(from)]->post(send).ok());
    ASSERT_TRUE(end_[static_cast<size_t>(1 - from)]->post(recv).ok());
  }

  static std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
    std::vector<uint8_t> v(bytes);
    std::iota(v.begin(), v.end(), seed);
    return v;
  }

  std::unique_ptr<NetPlugin> verbs_;  // the verbs network is the test's own; plugins are the process's
  NetPlugin* plugin_ = nullptr;
  std::array<std::unique_ptr<NetPluginConnection>, 2> end_;

  void TearDown() override {
    end_[0].reset();
    end_[1].reset();
  }
};

TEST_P(NetPluginPair, MessagesArriveWholeAndInOrderBothWays) {
  // Both ends close at the end with nothing in flight (the plugin checks).
  setenv("HCL_TEST_NET_STRICT_CLOSE", "1", 1);
  // Empty, one byte, one piece exactly, several pieces and a tail.
  const std::vector<size_t> sizes = {0, 1, 4096, 3 * 4096 + 7, 20 * 4096};
  std::vector<std::vector<uint8_t>> sent, got;
  std::vector<std::unique_ptr<Transfer>> transfers;
  std::vector<Transfer*> all;
  for (int from = 0; from < 2; ++from) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      sent.push_back(pattern(sizes[i], static_cast<uint8_t>(i * 31 + static_cast<size_t>(from))));
      got.emplace_back(sizes[i], 0xee);
    }
  }
  for (size_t i = 0; i < sent.size(); ++i) {
    transfers.push_back(std::make_unique<Transfer>());
    transfers.push_back(std::make_unique<Transfer>());
    Transfer& s = *transfers[transfers.size() - 2];
    Transfer& r = *transfers.back();
    postPair(i < sizes.size() ? 0 : 1, s, sent[i], r, got[i], 0x100 + static_cast<uint32_t>(i),
             0x100 + static_cast<uint32_t>(i));
    all.push_back(&s);
    all.push_back(&r);
  }
  const Status s = pump(all);
  ASSERT_TRUE(s.ok()) << s.message();
  for (Transfer* t : all) EXPECT_FALSE(t->failed());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(got[i], sent[i]) << "message " << i;
  end_[0].reset();
  end_[1].reset();
  unsetenv("HCL_TEST_NET_STRICT_CLOSE");
}

// The executor shares one flag among a run's links: an idle link must not
// clear what a busy one raised.
TEST_P(NetPluginPair, ProgressOnlyEverRaisesTheFlag) {
  bool moved = true;
  ASSERT_TRUE(end_[0]->progress(&moved).ok());
  EXPECT_TRUE(moved);
  moved = false;
  ASSERT_TRUE(end_[0]->progress(&moved).ok());
  EXPECT_FALSE(moved) << "an idle link moves nothing";
}

// Over a network whose close cancels what is posted (verbs), a link keeps
// receives posted from open on: a message lands before its receive is
// queued, so its send completes (on an HCA, as on the fake, only a posted
// receive acknowledges it), and the receive queued later takes it whole.
TEST_P(NetPluginPair, ReceivesStayPostedWhereACloseCancelsThem) {
  if (!plugin_->closeCancelsRequests()) {
    GTEST_SKIP() << GetParam().name << " posts receives on demand (a plugin may refuse to close a comm with one)";
  }
  auto sent = pattern(3000, 5);
  std::vector<uint8_t> got(sent.size(), 0xee);
  Transfer send, recv;
  describe(send, true, sent.data(), sent.size(), 21);
  ASSERT_TRUE(end_[0]->post(send).ok());
  const Status s = pump({&send});  // rank 1 has queued no receive
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(send.failed());
  describe(recv, false, got.data(), got.size(), 21);
  ASSERT_TRUE(end_[1]->post(recv).ok());
  ASSERT_TRUE(pump({&recv}).ok());
  EXPECT_FALSE(recv.failed());
  EXPECT_EQ(got, sent);
}

TEST_P(NetPluginPair, AnotherTagFailsNamingBoth) {
  auto sent = pattern(100, 1);
  std::vector<uint8_t> got(100);
  Transfer send, recv;
  postPair(0, send, sent, recv, got, 0xaaaa, 0xbbbb);
  const Status s = pump({&send, &recv});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), hclInvalidUsage);
  EXPECT_NE(s.message().find("0x0000aaaa"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0x0000bbbb"), std::string::npos) << s.message();
  EXPECT_TRUE(recv.failed());
}

TEST_P(NetPluginPair, AnotherSizeFailsInsteadOfMixingData) {
  auto sent = pattern(3 * 4096, 1);
  std::vector<uint8_t> got(2 * 4096, 0xee);
  Transfer send, recv;
  postPair(0, send, sent, recv, got, 7, 7);
  const Status s = pump({&send, &recv});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("12288 bytes"), std::string::npos) << s.message();
  EXPECT_TRUE(recv.failed());
}

TEST_P(NetPluginPair, PeerGoneFailsAWaitingReceive) {
  std::vector<uint8_t> got(64);
  Transfer recv;
  describe(recv, false, got.data(), got.size(), 5);
  ASSERT_TRUE(end_[1]->post(recv).ok());
  end_[0].reset();  // closes rank 0's comms
  const Status s = pump({&recv});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(isVerbs(GetParam()) ? "verbs" : "hcltest"), std::string::npos) << s.message();
  EXPECT_TRUE(recv.failed());
  Transfer later;
  describe(later, true, got.data(), got.size(), 6);
  EXPECT_FALSE(end_[1]->post(later).ok()) << "a failed link refuses new work";
  EXPECT_TRUE(later.failed());
}

// A sender whose sends completed may close before its peer read the data
// (its last call returned; the receiver is slower): nothing it sent is lost.
// A receive queued behind it, for a message that never comes, meets the
// close and fails, while the pieces before it are still delivered.
TEST_P(NetPluginPair, SenderThatClosesFirstLosesNothing) {
  auto sent = pattern(2 * 4096 + 3, 7);  // three pieces; the next receive's piece meets the close
  std::vector<uint8_t> got(sent.size(), 0xee), never(16);
  Transfer send, recv, unanswered;
  describe(send, true, sent.data(), sent.size(), 11);
  describe(recv, false, got.data(), got.size(), 11);
  describe(unanswered, false, never.data(), never.size(), 12);
  ASSERT_TRUE(end_[0]->post(send).ok());
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!send.done() && std::chrono::steady_clock::now() < end) {
    bool moved = false;
    ASSERT_TRUE(end_[0]->progress(&moved).ok());
  }
  ASSERT_TRUE(send.done() && !send.failed());
  end_[0].reset();
  ASSERT_TRUE(end_[1]->post(recv).ok());
  ASSERT_TRUE(end_[1]->post(unanswered).ok());
  const Status s = pump({&recv, &unanswered});
  EXPECT_FALSE(s.ok()) << "the unanswered receive fails";
  EXPECT_TRUE(recv.done() && !recv.failed()) << s.message();
  EXPECT_EQ(got, sent);
  EXPECT_TRUE(unanswered.failed());
}

// The receiver's last receive completes and it closes at once, before the
// sender learned that its sends arrived: the sends still succeed. Over verbs
// the fake then loses every acknowledgement (as a lossy RoCE fabric may lose
// the last one while the receiver destroys its queue pair), so only the
// receiver's closing count can tell the sender that its pieces landed.
TEST_P(NetPluginPair, ReceiverThatClosesRightAfterItsLastReceiveFailsNoSend) {
  hcl::test::ScopedEnv loseAcks("HCL_FAKE_VERBS_LOSE_ACKS", "1");
  auto sent = pattern(4096 + 100, 9);  // two pieces
  std::vector<uint8_t> got(sent.size(), 0xee);
  Transfer send, recv;
  postPair(0, send, sent, recv, got, 13, 13);
  ASSERT_TRUE(pump({&recv}).ok());
  ASSERT_EQ(got, sent);
  end_[1].reset();
  const Status s = pump({&send});
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(send.done() && !send.failed());
}

// What the receiver never took still fails at its close: four pieces fill
// its posted receives, nothing is queued to consume them, and the fifth
// waits in the network until the receiver closes.
TEST_P(NetPluginPair, SendsPastWhatTheReceiverTookFailAtItsClose) {
  if (!plugin_->closeCancelsRequests()) {
    GTEST_SKIP() << GetParam().name << " completes sends into the socket, before the receiver has room";
  }
  auto first = pattern(4 * 4096, 1), second = pattern(64, 2);
  Transfer sendFirst, sendSecond;
  describe(sendFirst, true, first.data(), first.size(), 14);
  describe(sendSecond, true, second.data(), second.size(), 15);
  ASSERT_TRUE(end_[0]->post(sendFirst).ok());
  ASSERT_TRUE(end_[0]->post(sendSecond).ok());
  ASSERT_TRUE(pump({&sendFirst}).ok());
  for (int i = 0; i < 100; ++i) {
    bool moved = false;
    ASSERT_TRUE(end_[0]->progress(&moved).ok());
  }
  ASSERT_FALSE(sendSecond.done()) << "the fifth piece has no receive to land in";
  end_[1].reset();
  EXPECT_FALSE(pump({&sendSecond}).ok());
  EXPECT_TRUE(sendSecond.failed());
}

TEST_P(NetPluginPair, PeerThatFinishedFirstIsNoErrorUntilUsed) {
  auto sent = pattern(64, 3);
  std::vector<uint8_t> got(64);
  Transfer send, recv;
  postPair(0, send, sent, recv, got, 9, 9);
  ASSERT_TRUE(pump({&send, &recv}).ok());
  end_[0].reset();
  // Rank 1 goes on polling its other links' work; this one has nothing queued.
  for (int i = 0; i < 200; ++i) {
    bool moved = false;
    ASSERT_TRUE(end_[1]->progress(&moved).ok()) << "iteration " << i;
  }
  Transfer late;
  describe(late, false, got.data(), got.size(), 10);
  const Status s = end_[1]->post(late);
  if (s.ok()) {
    EXPECT_FALSE(pump({&late}).ok());
  }
  EXPECT_TRUE(late.failed());
}

TEST_P(NetPluginPair, AbortLeavesQueuedTransfersAlone) {
  std::vector<uint8_t> got(64);
  Transfer recv;
  describe(recv, false, got.data(), got.size(), 5);
  ASSERT_TRUE(end_[1]->post(recv).ok());
  end_[1]->abort();
  EXPECT_FALSE(recv.done()) << "after abort the connection never touches a queued transfer";
  bool moved = false;
  EXPECT_FALSE(end_[1]->progress(&moved).ok());
  EXPECT_FALSE(recv.done());
  // Rank 0 learns of the abort when it next uses the link.
  Transfer peerRecv;
  describe(peerRecv, false, got.data(), got.size(), 5);
  ASSERT_TRUE(end_[0]->post(peerRecv).ok());
  end_[1].reset();
  EXPECT_FALSE(pump({&peerRecv}).ok());
  EXPECT_TRUE(peerRecv.failed());
}

INSTANTIATE_TEST_SUITE_P(Abi, NetPluginPair,
                         ::testing::Values(Network{"v11", "libnccl-net-hcltest-v11.so"},
                                           Network{"v10", "libnccl-net-hcltest.so"},
                                           Network{"v9", "libnccl-net-hcltest-v9.so"},
                                           Network{"v8", "libnccl-net-hcltest-v8.so"}
#ifdef HCL_FAKE_VERBS_LIBRARY
                                           ,
                                           Network{"verbs", HCL_FAKE_VERBS_LIBRARY}
#endif
                                           ),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace hcl::netplugin
