// The peer watch (transports/peer_watch.h): rank 1 runs in a forked child,
// so that its end can come without a word, as a killed process's does.
#include "transports/peer_watch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace hcl {
namespace {

using namespace std::chrono_literals;

std::vector<PeerInfo> twoPeers() {
  std::vector<PeerInfo> peers(2);
  for (int r = 0; r < 2; ++r) {
    peers[static_cast<size_t>(r)].rank = r;
    peers[static_cast<size_t>(r)].pid = 1000 + r;
    peers[static_cast<size_t>(r)].hostId = "h" + std::to_string(r);
    peers[static_cast<size_t>(r)].rescueIp = "127.0.0.1";
  }
  return peers;
}

TransportContext contextOf(int rank, const std::vector<PeerInfo>& peers, int64_t timeoutMs = 10000) {
  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = 2;
  ctx.peers = &peers;
  ctx.commTag = 0x1234;
  ctx.timeoutMs = timeoutMs;
  return ctx;
}

// The listener's NIC: none, so its first address (twoPeers: loopback).
const auto firstAddress = [](int /*peer*/) { return -1; };

// What preparedFor() carries: the port, little-endian.
uint16_t portIn(const std::vector<uint8_t>& blob) {
  return blob.size() == 2 ? static_cast<uint16_t>(blob[0] | blob[1] << 8) : 0;
}
std::vector<uint8_t> blobOf(uint16_t port) {
  return {static_cast<uint8_t>(port & 0xff), static_cast<uint8_t>(port >> 8)};
}
const auto nothing = [](int /*peer*/) { return std::vector<uint8_t>{}; };

// One end of a pipe per process after the fork, so that a process that
// ends closes its end and the other's read returns.
class Pipe {
 public:
  Pipe() { EXPECT_EQ(pipe(fds_), 0); }
  ~Pipe() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  void keepReadEnd() { closeEnd(1); }
  void keepWriteEnd() { closeEnd(0); }
  bool put(uint16_t v) const { return write(fds_[1], &v, sizeof v) == sizeof v; }
  uint16_t get() const {
    uint16_t v = 0;
    return read(fds_[0], &v, sizeof v) == sizeof v ? v : 0;
  }

 private:
  void closeEnd(int end) {
    close(fds_[end]);
    fds_[end] = -1;
  }
  int fds_[2] = {-1, -1};
};

enum class Ending { Goodbye, Abort, NoWord };

// Rank 1 in a child: listens, takes rank 0's watch connection, waits for
// the word from rank 0, then ends as told.
class PeerWatchTest : public ::testing::Test {
 protected:
  void startRank1(Ending ending) {
    child_ = fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      toParent_.keepWriteEnd();
      toChild_.keepReadEnd();
      const auto peers = twoPeers();
      const TransportContext ctx = contextOf(1, peers);
      PeerWatch watch(1, 2, "test");
      if (!watch.prepare(ctx, {0}, firstAddress).ok()) _exit(2);
      const uint16_t port = portIn(watch.preparedFor(0));
      if (port == 0 || !toParent_.put(port)) _exit(3);
      if (!watch.connect(ctx, nothing).ok() || !watch.watching(0)) _exit(4);
      if (!toParent_.put(1) || toChild_.get() != 7) _exit(5);
      if (ending == Ending::Goodbye) watch.close();
      if (ending == Ending::Abort) watch.abort("rank 1: a made-up failure");
      _exit(0);  // no destructor: without a word, only the kernel closes the socket
    }
    toParent_.keepReadEnd();
    toChild_.keepWriteEnd();
  }
  void TearDown() override {
    if (child_ > 0) waitpid(child_, nullptr, 0);
  }
  // Rank 0's side: connects to the child's listener.
  std::unique_ptr<PeerWatch> connectRank0(const std::vector<PeerInfo>& peers) {
    auto watch = std::make_unique<PeerWatch>(0, 2, "test");
    const TransportContext ctx = contextOf(0, peers);
    EXPECT_TRUE(watch->prepare(ctx, {1}, firstAddress).ok());
    EXPECT_TRUE(watch->preparedFor(1).empty()) << "the lower rank of a pair does not listen";
    const std::vector<uint8_t> blob = blobOf(toParent_.get());
    const Status s = watch->connect(ctx, [&](int) { return blob; });
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(watch->watching(1));
    EXPECT_EQ(toParent_.get(), 1);
    return watch;
  }
  int endRank1() {
    EXPECT_TRUE(toChild_.put(7));
    int status = 0;
    EXPECT_EQ(waitpid(child_, &status, 0), child_);
    child_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // Rank 0's watch of a rank 1 that has ended as told.
  std::unique_ptr<PeerWatch> watchOfAnEndedRank1(Ending ending) {
    startRank1(ending);
    auto watch = connectRank0(twoPeers());
    EXPECT_TRUE(watch->check(1, false).ok()) << "alive";
    EXPECT_EQ(endRank1(), 0);
    return watch;
  }
  static Status firstFailure(PeerWatch& watch, bool linkMoving, std::chrono::milliseconds within) {
    Status seen;
    const auto end = std::chrono::steady_clock::now() + within;
    while (seen.ok() && std::chrono::steady_clock::now() < end) {
      seen = watch.check(1, linkMoving);
      std::this_thread::sleep_for(1ms);
    }
    return seen;
  }

  Pipe toParent_, toChild_;
  pid_t child_ = -1;
};

TEST_F(PeerWatchTest, AnEndWithoutAWordIsReportedNamingThePeer) {
  auto watch = watchOfAnEndedRank1(Ending::NoWord);
  const Status seen = firstFailure(*watch, false, 10s);
  ASSERT_FALSE(seen.ok()) << "the peer's end was never reported";
  EXPECT_EQ(seen.code(), hclRemoteError);
  EXPECT_NE(seen.message().find("rank 1 (pid 1001 on host h1) ended without closing"), std::string::npos)
      << seen.message();
  EXPECT_NE(seen.message().find("test peer-watch"), std::string::npos) << seen.message();
  EXPECT_EQ(watch->check(1, false).message(), seen.message()) << "it stays reported";
}

// Data the dead peer's kernel still held may be arriving: while the link
// moves, the end is not reported.
TEST_F(PeerWatchTest, AnEndIsNotReportedWhileTheLinkStillMoves) {
  auto watch = watchOfAnEndedRank1(Ending::NoWord);
  const Status moving = firstFailure(*watch, true, 600ms);
  EXPECT_TRUE(moving.ok()) << moving.message();
  EXPECT_FALSE(firstFailure(*watch, false, 10s).ok()) << "reported once the link stood still";
}

TEST_F(PeerWatchTest, AnAbortIsReportedAtOnce) {
  auto watch = watchOfAnEndedRank1(Ending::Abort);
  const Status seen = firstFailure(*watch, true, 10s);
  ASSERT_FALSE(seen.ok()) << "the abort was never reported";
  EXPECT_NE(seen.message().find("rank 1 (pid 1001 on host h1) aborted"), std::string::npos) << seen.message();
  EXPECT_NE(seen.message().find(", failing: rank 1: a made-up failure"), std::string::npos) << seen.message();
  EXPECT_FALSE(watch->watching(1));
}

TEST_F(PeerWatchTest, AGoodbyeIsNoDeath) {
  auto watch = watchOfAnEndedRank1(Ending::Goodbye);
  // Well past the grace a death would wait.
  const Status s = firstFailure(*watch, false, 600ms);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(watch->watching(1)) << "the goodbye ends the watch";
}

TEST(PeerWatch, AStrangerIsDroppedAndThePeerStillAccepted) {
  const auto peers = twoPeers();
  PeerWatch listener(1, 2, "test");
  const TransportContext ctx1 = contextOf(1, peers);
  ASSERT_TRUE(listener.prepare(ctx1, {0}, firstAddress).ok());
  const std::vector<uint8_t> blob = listener.preparedFor(0);
  const uint16_t port = portIn(blob);
  ASSERT_NE(port, 0);
  // Another communicator's rank 0: right magic and rank, wrong tag.
  const int stranger = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(stranger, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  const uint8_t hello[16] = {0x48, 0x4c, 0x43, 0x57, 0, 0, 0, 0, 0x99};
  ASSERT_EQ(send(stranger, hello, sizeof hello, 0), 16);
  Status accepted;
  {
    std::jthread rank1([&] { accepted = listener.connect(ctx1, nothing); });
    PeerWatch connector(0, 2, "test");
    const TransportContext ctx0 = contextOf(0, peers);
    EXPECT_TRUE(connector.prepare(ctx0, {1}, firstAddress).ok());
    std::this_thread::sleep_for(50ms);  // the stranger first
    EXPECT_TRUE(connector.connect(ctx0, [&](int) { return blob; }).ok());
  }
  EXPECT_TRUE(accepted.ok()) << accepted.message();
  EXPECT_TRUE(listener.watching(0));
  char byte = 0;
  EXPECT_EQ(recv(stranger, &byte, 1, 0), 0) << "the stranger's connection was closed";
  close(stranger);
}

TEST(PeerWatch, APeerThatNeverConnectsFailsSetupNamingIt) {
  const auto peers = twoPeers();
  PeerWatch listener(1, 2, "test");
  const TransportContext ctx = contextOf(1, peers, 200);
  ASSERT_TRUE(listener.prepare(ctx, {0}, firstAddress).ok());
  const Status s = listener.connect(ctx, nothing);
  EXPECT_EQ(s.code(), hclSystemError);
  EXPECT_NE(s.message().find("no watch connection with rank(s) 0 within 200 ms"), std::string::npos) << s.message();
}

// A pair whose listener has no address is watched by neither end, and
// both get through setup at once.
TEST(PeerWatch, APairWithoutAnAddressIsNotWatched) {
  auto peers = twoPeers();
  for (PeerInfo& p : peers) p.rescueIp.clear();  // and no addresses either
  PeerWatch lower(0, 2, "test"), higher(1, 2, "test");
  const TransportContext ctx0 = contextOf(0, peers, 200), ctx1 = contextOf(1, peers, 200);
  ASSERT_TRUE(lower.prepare(ctx0, {1}, firstAddress).ok());
  ASSERT_TRUE(higher.prepare(ctx1, {0}, firstAddress).ok());
  EXPECT_TRUE(higher.preparedFor(0).empty());
  EXPECT_TRUE(lower.connect(ctx0, nothing).ok());
  EXPECT_TRUE(higher.connect(ctx1, nothing).ok());
  EXPECT_FALSE(lower.watching(1));
  EXPECT_TRUE(lower.check(1, false).ok());
}

// A watched peer above this rank that sent no port, or a malformed one,
// fails setup naming it.
TEST(PeerWatch, AMissingOrMalformedPortFailsSetupNamingThePeer) {
  const auto peers = twoPeers();
  for (const std::vector<uint8_t>& sent : {std::vector<uint8_t>{}, std::vector<uint8_t>{1, 2, 3}}) {
    PeerWatch lower(0, 2, "test");
    const TransportContext ctx = contextOf(0, peers, 200);
    ASSERT_TRUE(lower.prepare(ctx, {1}, firstAddress).ok());
    const Status s = lower.connect(ctx, [&](int) { return sent; });
    EXPECT_EQ(s.code(), hclInternalError);
    EXPECT_NE(s.message().find("rank 0: test peer watch: rank 1 sent no port to watch it by"), std::string::npos)
        << s.message();
  }
}

TEST(PeerWatch, UnwatchedPeersAreNoErrors) {
  PeerWatch watch(0, 3, "test");
  EXPECT_TRUE(watch.check(2, false).ok());
  EXPECT_FALSE(watch.watching(2));
}

}  // namespace
}  // namespace hcl
