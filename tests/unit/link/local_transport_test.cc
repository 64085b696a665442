// The in-process transport: what a send posted after its rank aborted does.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "transports/local/local_transport.h"

namespace hcl {
namespace {

struct TwoRanks {
  std::unique_ptr<Transport> transport[2];
  std::vector<std::unique_ptr<Connection>> connections[2];

  TwoRanks() {
    TransportContext ctx[2];
    for (int r = 0; r < 2; ++r) {
      ctx[r].rank = r;
      ctx[r].nranks = 2;
      ctx[r].secret[0] = 0x5a;
      ctx[r].commTag = 77;
      transport[r] = makeLocalTransport();
      EXPECT_TRUE(transport[r]->prepare(ctx[r], {1 - r}).ok());
    }
    for (int r = 0; r < 2; ++r) {
      connections[r].resize(2);
      EXPECT_TRUE(transport[r]->connect(ctx[r], {1 - r}, connections[r]).ok());
    }
    for (auto& t : transport) t->finish();
  }
  Connection& link(int from) { return *connections[from][static_cast<size_t>(1 - from)]; }
};

void describe(Transfer& t, bool isSend, void* buffer, size_t bytes) {
  t.isSend = isSend;
  t.buffer = buffer;
  t.bytes = bytes;
  t.tag = 9;
}

TEST(LocalTransport, ASendMeetsItsReceive) {
  TwoRanks ranks;
  int out = 42, in = 0;
  Transfer send, recv;
  describe(send, true, &out, sizeof out);
  describe(recv, false, &in, sizeof in);
  ASSERT_TRUE(ranks.link(0).post(send).ok());
  ASSERT_TRUE(ranks.link(1).post(recv).ok());
  ASSERT_TRUE(ranks.link(1).progress(nullptr).ok());
  EXPECT_TRUE(recv.done() && !recv.failed());
  EXPECT_TRUE(send.done() && !send.failed());
  EXPECT_EQ(in, 42);
}

// Another thread may abort the communicator while a run is still posting:
// a send queued then would outlive the run that owns it.
TEST(LocalTransport, ASendPostedAfterAbortIsRefused) {
  TwoRanks ranks;
  ranks.link(0).abort();
  int in = 0;
  Transfer recv;
  describe(recv, false, &in, sizeof in);
  ASSERT_TRUE(ranks.link(1).post(recv).ok());
  {
    int out = 42;
    Transfer send;
    describe(send, true, &out, sizeof out);
    EXPECT_FALSE(ranks.link(0).post(send).ok());
    EXPECT_TRUE(send.failed());
  }
  // The peer finds nothing of it, only that this rank aborted.
  EXPECT_FALSE(ranks.link(1).progress(nullptr).ok());
  EXPECT_TRUE(recv.failed());
  EXPECT_EQ(in, 0);
}

}  // namespace
}  // namespace hcl
