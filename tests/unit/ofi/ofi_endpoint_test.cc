// Two libfabric endpoints in one process, on each software provider this
// machine offers: order, data, tags, sizes, pieces, and what an abort leaves.
#include <gtest/gtest.h>

#ifndef HCL_NO_OFI_HEADERS
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "transports/ofi/fabric_api.h"
#include "tests/unit/transfer_pump.h"
#include "transports/ofi/ofi_endpoint.h"

namespace hcl::ofi {
namespace {

class OfiEndpoints : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string why;
    const FabricApi* api = fabricApi(&why);
    if (!api) GTEST_SKIP() << "libfabric is not usable here: " << why;
    const OfiRequest request{OfiMode::On, GetParam()};
    for (int rank = 0; rank < 2; ++rank) {
      bool found = false;
      const Status s = Endpoint::open(*api, request, rank, 2, ep_[rank], &found);
      ASSERT_TRUE(s.ok()) << s.message();
      if (!found) GTEST_SKIP() << "libfabric offers no provider '" << GetParam() << "' here";
    }
    ASSERT_TRUE(ep_[0]->addPeer(1, ep_[1]->address()).ok());
    ASSERT_TRUE(ep_[1]->addPeer(0, ep_[0]->address()).ok());
  }

  // Drives both ends until every transfer is done or one end fails.
  Status pump(const std::vector<Transfer*>& transfers) {
    return hcl::testing::pumpTransfers(
        [&]() -> Status {
          for (int rank = 0; rank < 2; ++rank) {
            bool moved = false;
            HCL_TRY(ep_[rank]->progress(1 - rank, &moved));
          }
          return {};
        },
        transfers);
  }

  static void describe(Transfer& t, bool isSend, void* buffer, size_t bytes, uint32_t tag) {
    hcl::testing::describeTransfer(t, isSend, buffer, bytes, tag);
  }

  // Posts `sent` from rank `from` to the other rank, and there a receive into `into`, both under `tag`.
  void postPair(int from, Transfer& send, std::vector<uint8_t>& sent, Transfer& recv, std::vector<uint8_t>& into,
                uint32_t tag) {
    describe(send, true, sent.data(), sent.size(), tag);
    describe(recv, false, into.data(), into.size(), tag);
    ASSERT_TRUE(ep_[from]->post(1 - from, send).ok());
    ASSERT_TRUE(ep_[1 - from]->post(from, recv).ok());
  }

  std::unique_ptr<Endpoint> ep_[2];
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST_P(OfiEndpoints, MessagesMatchInPostingOrderWithTheirData) {
  const size_t sizes[] = {0, 1, 4096, 300000, 17};
  std::vector<std::vector<uint8_t>> sent, received;
  std::vector<std::unique_ptr<Transfer>> sends, recvs;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    sent.push_back(pattern(sizes[i], static_cast<uint8_t>(i)));
    received.emplace_back(sizes[i], 0xee);
  }
  // Every send is posted before any receive: the provider holds them as unexpected.
  for (size_t i = 0; i < std::size(sizes); ++i) {
    sends.push_back(std::make_unique<Transfer>());
    describe(*sends.back(), true, sent[i].data(), sizes[i], 0x100 + static_cast<uint32_t>(i));
    ASSERT_TRUE(ep_[0]->post(1, *sends.back()).ok());
  }
  for (size_t i = 0; i < std::size(sizes); ++i) {
    recvs.push_back(std::make_unique<Transfer>());
    describe(*recvs.back(), false, received[i].data(), sizes[i], 0x100 + static_cast<uint32_t>(i));
    ASSERT_TRUE(ep_[1]->post(0, *recvs.back()).ok());
  }
  std::vector<Transfer*> all;
  for (auto& t : sends) all.push_back(t.get());
  for (auto& t : recvs) all.push_back(t.get());
  const Status s = pump(all);
  ASSERT_TRUE(s.ok()) << s.message();
  for (size_t i = 0; i < std::size(sizes); ++i) {
    EXPECT_FALSE(recvs[i]->failed());
    EXPECT_EQ(received[i], sent[i]) << "message " << i << " of " << sizes[i] << " bytes";
  }
}

TEST_P(OfiEndpoints, BothDirectionsAtOnce) {
  std::vector<uint8_t> a = pattern(200000, 1), b = pattern(200000, 2), intoA(200000), intoB(200000);
  Transfer sendA, sendB, recvA, recvB;
  postPair(0, sendA, a, recvB, intoB, 7);
  postPair(1, sendB, b, recvA, intoA, 7);
  const Status s = pump({&sendA, &sendB, &recvA, &recvB});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(intoA, b);
  EXPECT_EQ(intoB, a);
}

TEST_P(OfiEndpoints, LargeMessagesGoInPiecesAndTheNextMessageStillMatches) {
  ep_[0]->limitPieceBytes(4096);
  ep_[1]->limitPieceBytes(4096);
  std::vector<uint8_t> big = pattern(100001, 3), small = pattern(10, 4), intoBig(big.size()), intoSmall(small.size());
  Transfer s1, s2, r1, r2;
  postPair(0, s1, big, r1, intoBig, 1);
  postPair(0, s2, small, r2, intoSmall, 2);
  const Status s = pump({&s1, &s2, &r1, &r2});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(intoBig, big);
  EXPECT_EQ(intoSmall, small);
}

TEST_P(OfiEndpoints, AMessageCutIntoMorePiecesThanExpectedIsAnError) {
  for (const bool senderLonger : {true, false}) {
    SetUp();
    ep_[0]->limitPieceBytes(4096);
    ep_[1]->limitPieceBytes(4096);
    // Whole pieces on both ends, so only the last-piece mark tells them apart.
    std::vector<uint8_t> data = pattern(senderLonger ? 8192 : 4096, 8), into(senderLonger ? 4096 : 8192, 0xee);
    Transfer send, recv;
    postPair(0, send, data, recv, into, 4);
    const Status s = pump({&recv});
    EXPECT_EQ(s.code(), hclInvalidUsage) << s.message();
    const std::string want = std::string("rank 1: message from rank 0 with tag 0x00000004 is ") +
                             (senderLonger ? "longer than the 4096" : "shorter than the 8192") + " bytes expected";
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
    EXPECT_TRUE(recv.failed());
  }
}

TEST_P(OfiEndpoints, AClosingPeerFailsItsPeersAtOnce) {
  if (std::string(GetParam()) == "shm") GTEST_SKIP() << "shm: both endpoints in one process share their mapping";
  // A first message sets up the provider's connection between the two.
  std::vector<uint8_t> data = pattern(16, 9), into(16);
  Transfer send, recv;
  postPair(1, send, data, recv, into, 5);
  ASSERT_TRUE(pump({&send, &recv}).ok());
  Transfer waiting;
  describe(waiting, false, into.data(), into.size(), 6);
  ASSERT_TRUE(ep_[0]->post(1, waiting).ok());
  ep_[1]->close();
  Status s;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (s.ok() && std::chrono::steady_clock::now() < end) {
    bool moved = false;
    s = ep_[0]->progress(1, &moved);
  }
  EXPECT_EQ(s.code(), hclRemoteError);
  EXPECT_NE(s.message().find("rank 0: rank 1 (ofi "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(") aborted"), std::string::npos) << s.message();
  EXPECT_TRUE(waiting.failed());
}

TEST_P(OfiEndpoints, AnotherTagIsAnErrorNamingBoth) {
  std::vector<uint8_t> data = pattern(64, 5), into(64);
  Transfer send, recv;
  describe(send, true, data.data(), data.size(), 0x11);
  describe(recv, false, into.data(), into.size(), 0x22);
  ASSERT_TRUE(ep_[0]->post(1, send).ok());
  ASSERT_TRUE(ep_[1]->post(0, recv).ok());
  const Status s = pump({&send, &recv});
  EXPECT_EQ(s.code(), hclInvalidUsage) << s.message();
  EXPECT_NE(s.message().find("tag 0x00000011/64 bytes, expected tag 0x00000022/64 bytes"), std::string::npos)
      << s.message();
  EXPECT_TRUE(recv.failed());
  // The link stays failed, and says so to later posts.
  Transfer later;
  describe(later, false, into.data(), into.size(), 0x22);
  EXPECT_EQ(ep_[1]->post(0, later).code(), hclInvalidUsage);
  EXPECT_TRUE(later.failed());
}

TEST_P(OfiEndpoints, ALongerOrShorterMessageIsAnErrorNamingBothSizes) {
  for (const size_t receiveBytes : {size_t{50}, size_t{200}}) {
    SetUp();
    std::vector<uint8_t> data = pattern(100, 6), into(receiveBytes, 0xee);
    Transfer send, recv;
    postPair(0, send, data, recv, into, 9);
    const Status s = pump({&send, &recv});
    EXPECT_EQ(s.code(), hclInvalidUsage) << s.message();
    if (receiveBytes > 100) {
      EXPECT_NE(s.message().find("tag 0x00000009/100 bytes, expected tag 0x00000009/200 bytes"), std::string::npos)
          << s.message();
    } else {
      // What a provider tells of a longer message varies: its length, or only that it is longer.
      const bool named = s.message().find("tag 0x00000009/100 bytes, expected tag 0x00000009/50 bytes") !=
                         std::string::npos;
      const bool longer = s.message().find("rank 1: message from rank 0 is longer than the 50 bytes expected with "
                                           "tag 0x00000009") != std::string::npos;
      EXPECT_TRUE(named || longer) << s.message();
    }
  }
}

TEST_P(OfiEndpoints, AClosedEndpointLeavesQueuedTransfersAlone) {
  // libfabric 1.17's shm provider crashes the sender when the receiving
  // endpoint of the same process is closed under it (they share its region
  // mapping); across processes it is the integration tests' abort cases.
  if (std::string(GetParam()) == "shm") GTEST_SKIP() << "shm: both endpoints in one process share their mapping";
  std::vector<uint8_t> data = pattern(4096, 7), into(4096, 0xee);
  Transfer recv, send;
  describe(recv, false, into.data(), into.size(), 3);
  describe(send, true, data.data(), data.size(), 3);
  ASSERT_TRUE(ep_[1]->post(0, recv).ok());
  ep_[1]->close();
  ASSERT_TRUE(ep_[0]->post(1, send).ok());
  for (int i = 0; i < 1000; ++i) {
    bool moved = false;
    (void)ep_[0]->progress(1, &moved);
  }
  EXPECT_FALSE(recv.done()) << "a closed endpoint marks nothing";
  EXPECT_EQ(into, std::vector<uint8_t>(4096, 0xee)) << "nor writes into a queued buffer";
  bool moved = false;
  const Status s = ep_[1]->progress(0, &moved);
  EXPECT_EQ(s.code(), hclRemoteError);
  EXPECT_NE(s.message().find("aborted"), std::string::npos) << s.message();
  Transfer later;
  describe(later, true, data.data(), data.size(), 3);
  EXPECT_EQ(ep_[1]->post(0, later).code(), hclRemoteError);
  EXPECT_TRUE(later.failed());
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiEndpoints, ::testing::Values("tcp;ofi_rxm", "shm"),
                         [](const auto& info) { return std::string(info.param) == "shm" ? "shm" : "tcp_rxm"; });

}  // namespace
}  // namespace hcl::ofi

#else
TEST(OfiEndpoints, NeedLibfabricHeaders) { GTEST_SKIP() << "built without libfabric's headers (rdma/fabric.h)"; }
#endif
