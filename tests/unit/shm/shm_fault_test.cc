// Misuse, dead or aborting peers, and segment lifetime of the shm transport.
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <thread>

#include "shm_test_fixture.h"
#include "transports/abort_reason.h"
#include "transports/shm/shm_process.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_transport.h"

namespace hcl::test {
namespace {

using namespace std::chrono_literals;

Transfer& addTransfer(std::deque<Transfer>& transfers, bool isSend, std::vector<uint8_t>& data,
                      uint32_t tag) {
  Transfer& t = transfers.emplace_back();
  t.isSend = isSend;
  t.buffer = data.data();
  t.bytes = data.size();
  t.tag = tag;
  return t;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Rank 0 sends (sendTag, sendBytes); rank 1 expects (recvTag, recvBytes) and
// must fail with hclInvalidUsage, then aborts so rank 0 cannot wait forever.
// With `postAfterArrival`, rank 1 posts its receive only once the message is
// in its FIFO (a copied send completes there), where a small receive looks
// for it at once.
int mismatch(int rank, const CommIdentity& id, SharedState& shared, uint32_t sendTag,
             size_t sendBytes, uint32_t recvTag, size_t recvBytes, bool postAfterArrival = false) {
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  std::deque<Transfer> transfers;
  if (rank == 0) {
    std::vector<uint8_t> data(sendBytes, 1);
    Transfer& send = addTransfer(transfers, true, data, sendTag);
    CHILD_CHECK_OK(c.post(send));
    // Copy-through sends complete once in the FIFO; a single-copy send waits
    // for the reader, which aborts instead.
    const Status s = driveUntilDone(setup.all, {&send});
    if (s.ok()) {
      CHILD_CHECK(!send.failed(), "send failed without an error");
    } else {
      CHILD_CHECK(s.code() == hclRemoteError && contains(s.message(), "aborted"), "{}",
                  s.message());
      CHILD_CHECK(send.failed(), "send not marked failed");
    }
    if (postAfterArrival) CHILD_CHECK(shared.barrier.wait(30s), "arrival barrier");
    CHILD_CHECK(shared.barrier.wait(30s), "final barrier");
    return 0;
  }
  if (postAfterArrival) CHILD_CHECK(shared.barrier.wait(30s), "arrival barrier");
  std::vector<uint8_t> data(recvBytes, 0);
  Transfer& recv = addTransfer(transfers, false, data, recvTag);
  CHILD_CHECK_OK(c.post(recv));
  const Status s = driveUntilDone(setup.all, {&recv});
  CHILD_CHECK(s.code() == hclInvalidUsage, "got {} ({})", s.message(), static_cast<int>(s.code()));
  const std::string expected =
      fmt::format("rank 1: message from rank 0 has tag {:#010x}/{} bytes, expected tag {:#010x}/{} bytes",
                  sendTag, sendBytes, recvTag, recvBytes);
  CHILD_CHECK(contains(s.message(), expected), "message '{}' lacks '{}'", s.message(), expected);
  CHILD_CHECK(recv.failed(), "receive not marked failed");
  // The connection stays failed.
  Transfer& again = addTransfer(transfers, false, data, recvTag);
  CHILD_CHECK(c.post(again).code() == hclInvalidUsage, "post after failure succeeded");
  CHILD_CHECK(again.failed(), "transfer posted after failure not marked failed");
  bool moved = false;
  CHILD_CHECK(c.progress(&moved).code() == hclInvalidUsage, "progress after failure succeeded");
  c.abort();
  CHILD_CHECK(shared.barrier.wait(30s), "final barrier");
  return 0;
}

TEST_F(ShmTest, TagMismatchIsInvalidUsage) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(
      runProcesses(2, [&](int rank) { return mismatch(rank, id_, shared, 5, 64, 6, 64); }));
}

// 8 and 16 bytes go through the packed lane, 24 and 32 through a small
// slot's header line; 200 and 3000 are copied whole into one small or medium
// slot, which a receive posted after them also takes at once.
TEST_F(ShmTest, TagMismatchOfASmallMessageAlreadyThereIsInvalidUsage) {
  for (const size_t bytes : {8, 24, 200, 3000}) {
    SCOPED_TRACE(fmt::format("{} bytes", bytes));
    SharedState& shared = makeShared(2);
    expectAllExitedZero(
        runProcesses(2, [&](int rank) { return mismatch(rank, id_, shared, 5, bytes, 6, bytes, true); }));
  }
}

TEST_F(ShmTest, SizeMismatchOfASmallMessageAlreadyThereIsInvalidUsage) {
  const std::pair<size_t, size_t> sentExpected[] = {{8, 16}, {16, 0}, {24, 32}, {100, 200}, {200, 40}, {3000, 2000}};
  for (const auto& [sent, expected] : sentExpected) {
    SCOPED_TRACE(fmt::format("sent {} bytes, expected {}", sent, expected));
    SharedState& shared = makeShared(2);
    expectAllExitedZero(
        runProcesses(2, [&](int rank) { return mismatch(rank, id_, shared, 5, sent, 5, expected, true); }));
  }
}

TEST_F(ShmTest, SizeMismatchOfLargeMessageIsInvalidUsage) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(runProcesses(
      2, [&](int rank) { return mismatch(rank, id_, shared, 9, 1 << 20, 9, (1 << 20) + 1); }));
}

// Sizes on either side of a lane boundary: the receiver waits on one lane
// while the message sits in another, and must still name both sizes.
TEST_F(ShmTest, SizeMismatchAcrossLanesIsInvalidUsage) {
  const std::pair<size_t, size_t> sentExpected[] = {
      {8, 1 << 20},     // packed lane, expected in the bulk lane
      {1 << 20, 8},     // bulk lane, expected in the packed lane
      {16, 17},         // packed lane, expected in the small lane
      {17, 16},         // small lane, expected in the packed lane
      {200, 3000},      // small lane, expected in the medium lane
      {3000, 300000},   // medium lane, expected in the bulk lane
  };
  for (const auto& [sent, expected] : sentExpected) {
    SCOPED_TRACE(fmt::format("sent {} bytes, expected {}", sent, expected));
    SharedState& shared = makeShared(2);
    expectAllExitedZero(runProcesses(
        2, [&](int rank) { return mismatch(rank, id_, shared, 9, sent, 9, expected); }));
  }
}

// Rank 0 sends 8 bytes, then 1 MiB, with one tag; rank 1 posts its receives
// the other way round once both are in the FIFOs. Each lane's head matches
// one of the receives, so only the order across lanes shows the mismatch.
int swappedAcrossLanes(int rank, const CommIdentity& id, SharedState& shared) {
  ::setenv("HCL_SHM_CMA_THRESHOLD", "0", 1);  // both sends complete into the FIFOs
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  std::deque<Transfer> transfers;
  std::vector<uint8_t> small(8, 1), large(1 << 20, 2);
  if (rank == 0) {
    Transfer& first = addTransfer(transfers, true, small, 9);
    Transfer& second = addTransfer(transfers, true, large, 9);
    CHILD_CHECK_OK(c.post(first));
    CHILD_CHECK_OK(c.post(second));
    CHILD_CHECK_OK(driveUntilDone(setup.all, {&first, &second}));
    CHILD_CHECK(shared.barrier.wait(30s), "barrier after sending");
    CHILD_CHECK(shared.barrier.wait(30s), "final barrier");
    return 0;
  }
  CHILD_CHECK(shared.barrier.wait(30s), "barrier after sending");
  Transfer& first = addTransfer(transfers, false, large, 9);
  Transfer& second = addTransfer(transfers, false, small, 9);
  CHILD_CHECK_OK(c.post(first));
  CHILD_CHECK_OK(c.post(second));
  const Status s = driveUntilDone(setup.all, {&first, &second});
  CHILD_CHECK(s.code() == hclInvalidUsage, "got {} ({})", s.message(), static_cast<int>(s.code()));
  const std::string expected = "rank 1: message from rank 0 has tag 0x00000009/8 bytes, expected tag 0x00000009/1048576 bytes";
  CHILD_CHECK(contains(s.message(), expected), "message '{}' lacks '{}'", s.message(), expected);
  CHILD_CHECK(first.failed() && second.failed(), "receives not marked failed");
  CHILD_CHECK(shared.barrier.wait(30s), "final barrier");
  return 0;
}

TEST_F(ShmTest, MessagesSwappedAcrossLanesAreInvalidUsage) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(runProcesses(2, [&](int rank) { return swappedAcrossLanes(rank, id_, shared); }));
}

// Rank 1 starts sending a large message and is SIGKILLed part way; rank 0,
// which also waits for a second message, must fail with hclRemoteError.
int killedMidTransfer(int rank, const CommIdentity& id, SharedState& shared,
                      const char* threshold) {
  ::setenv("HCL_SHM_CMA_THRESHOLD", threshold, 1);
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  std::deque<Transfer> transfers;
  std::vector<uint8_t> big(64 << 20, 3), small(1, 0);
  if (rank == 1) {
    Transfer& send = addTransfer(transfers, true, big, 1);
    CHILD_CHECK_OK(c.post(send));
    bool moved = false;
    for (int i = 0; i < 3; ++i) CHILD_CHECK_OK(c.progress(&moved));
    // Wait (bounded) until the receiver has started, then die.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (shared.flag.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      CHILD_CHECK_OK(c.progress(&moved));
    }
    ::raise(SIGKILL);
    return 1;
  }
  Transfer& recvBig = addTransfer(transfers, false, big, 1);
  Transfer& recvSmall = addTransfer(transfers, false, small, 2);
  CHILD_CHECK_OK(c.post(recvBig));
  CHILD_CHECK_OK(c.post(recvSmall));
  bool moved = false;
  CHILD_CHECK_OK(c.progress(&moved));
  shared.flag.store(1);
  const Status s = driveUntilDone(setup.all, {&recvBig, &recvSmall}, 30s);
  CHILD_CHECK(s.code() == hclRemoteError, "got {} ({})", s.message(), static_cast<int>(s.code()));
  CHILD_CHECK(contains(s.message(), "rank 0: rank 1 (pid ") && contains(s.message(), "exited"),
              "message: {}", s.message());
  CHILD_CHECK(recvSmall.failed(), "pending receive not marked failed");
  CHILD_CHECK(c.progress(&moved).code() == hclRemoteError, "connection did not stay failed");
  return 0;
}

void expectSurvivorDetectsKill(const std::vector<ChildStatus>& statuses) {
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_TRUE(statuses[0].exited && statuses[0].code == 0)
      << "survivor exited=" << statuses[0].exited << " code=" << statuses[0].code
      << " signal=" << statuses[0].signal << " timedOut=" << statuses[0].timedOut;
  EXPECT_EQ(statuses[1].signal, SIGKILL)
      << "victim exited=" << statuses[1].exited << " code=" << statuses[1].code;
  EXPECT_FALSE(statuses[1].timedOut);
}

TEST_F(ShmTest, PeerKilledDuringSingleCopyTransferFailsSurvivor) {
  SharedState& shared = makeShared(2);
  expectSurvivorDetectsKill(
      runProcesses(2, [&](int rank) { return killedMidTransfer(rank, id_, shared, "65536"); }));
}

TEST_F(ShmTest, PeerKilledDuringCopyThroughTransferFailsSurvivor) {
  SharedState& shared = makeShared(2);
  expectSurvivorDetectsKill(
      runProcesses(2, [&](int rank) { return killedMidTransfer(rank, id_, shared, "0"); }));
}

// Rank 0 aborts its connection while rank 1 waits for a message; for a
// failure (`why` not empty), rank 1 quotes it.
int abortingPeer(int rank, const CommIdentity& id, SharedState& shared, const std::string& why = {}) {
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  if (rank == 0) {
    if (why.empty()) {
      c.abort();
    } else {
      c.abortBecause(remoteError(why));
      c.abortBecause(remoteError("a later failure, which must not replace the first"));
    }
    // Stay alive, so the peer sees an abort and not an exit.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (shared.flag.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    CHILD_CHECK(shared.flag.load() == 1, "peer never finished");
    return 0;
  }
  std::deque<Transfer> transfers;
  std::vector<uint8_t> data(4096, 0);
  Transfer& recv = addTransfer(transfers, false, data, 7);
  CHILD_CHECK_OK(c.post(recv));
  const Status s = driveUntilDone(setup.all, {&recv}, 30s);
  shared.flag.store(1);
  CHILD_CHECK(s.code() == hclRemoteError, "got {} ({})", s.message(), static_cast<int>(s.code()));
  CHILD_CHECK(contains(s.message(), "rank 1: rank 0 (pid ") && contains(s.message(), "aborted"),
              "message: {}", s.message());
  const std::string quoted = why.empty() ? std::string() : ", failing: " + shortenedAbortReason(why);
  CHILD_CHECK(s.message().ends_with("shm) aborted" + quoted), "message: {}", s.message());
  CHILD_CHECK(recv.failed(), "receive not marked failed");
  return 0;
}

TEST_F(ShmTest, PeerAbortIsDetected) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(runProcesses(2, [&](int rank) { return abortingPeer(rank, id_, shared); }));
}

// A peer that aborts for a failure says which; a long chain of quotes keeps
// its start and its end, where the first cause is.
TEST_F(ShmTest, PeerAbortForAFailureIsQuoted) {
  const std::string cause = "hclAllReduce: rank 0: rank 7 (pid 4711, shm) exited";
  SharedState& shared = makeShared(2);
  expectAllExitedZero(runProcesses(2, [&](int rank) { return abortingPeer(rank, id_, shared, cause); }));
  std::string chain = cause;
  for (int hop = 0; hop < 40; ++hop) chain = "rank 0: rank 1 (pid 4712, shm) aborted, failing: " + chain;
  ASSERT_GT(chain.size(), kMostAbortReasonBytes);
  ASSERT_TRUE(shortenedAbortReason(chain).ends_with(cause));
  SharedState& again = makeShared(2);
  expectAllExitedZero(runProcesses(2, [&](int rank) { return abortingPeer(rank, id_, again, chain); }));
}

// Rank 0 publishes a single-copy send, then aborts while staying alive (its
// caller may now reuse the buffer); rank 1 only starts reading afterwards.
// The read must fail instead of delivering whatever the buffer holds now.
int singleCopyFromAnAbortedSender(int rank, const CommIdentity& id, SharedState& shared) {
  ::setenv("HCL_SHM_CMA_THRESHOLD", "4096", 1);
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  std::deque<Transfer> transfers;
  std::vector<uint8_t> data(1 << 20, 5);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  if (rank == 0) {
    Transfer& send = addTransfer(transfers, true, data, 9);
    CHILD_CHECK_OK(c.post(send));
    bool moved = false;
    for (int i = 0; i < 100 && !moved; ++i) CHILD_CHECK_OK(c.progress(&moved));
    CHILD_CHECK(moved, "the send was never published");
    c.abort();
    shared.flag.store(1);
    while (shared.flag.load() != 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    CHILD_CHECK(shared.flag.load() == 2, "peer never finished");
    return 0;
  }
  while (shared.flag.load() != 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  std::vector<uint8_t> got(data.size(), 0);
  Transfer& recv = addTransfer(transfers, false, got, 9);
  CHILD_CHECK_OK(c.post(recv));
  const Status s = driveUntilDone(setup.all, {&recv}, 30s);
  shared.flag.store(2);
  CHILD_CHECK(s.code() == hclRemoteError, "got {} ({})", s.message(), static_cast<int>(s.code()));
  CHILD_CHECK(contains(s.message(), "rank 1: rank 0 (pid ") && contains(s.message(), "aborted"), "message: {}",
              s.message());
  CHILD_CHECK(recv.failed(), "receive not marked failed");
  return 0;
}

TEST_F(ShmTest, SingleCopyFromAnAbortedSenderFails) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(runProcesses(2, [&](int rank) { return singleCopyFromAnAbortedSender(rank, id_, shared); }));
}

// Rank 0 sends one message and exits at once; rank 1 only looks afterwards.
// What the peer published before leaving must still arrive.
int senderExitsRightAway(int rank, const CommIdentity& id, SharedState& shared) {
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  std::deque<Transfer> transfers;
  if (rank == 0) {
    std::vector<uint8_t> data = pattern(0, 1, 0, 100);
    Transfer& send = addTransfer(transfers, true, data, 7);
    CHILD_CHECK_OK(c.post(send));
    CHILD_CHECK_OK(driveUntilDone(setup.all, {&send}, 30s));
    shared.flag.store(static_cast<int>(getpid()));
    _exit(0);
  }
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (shared.flag.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  const pid_t sender = static_cast<pid_t>(shared.flag.load());
  CHILD_CHECK(sender != 0, "sender never finished");
  // Wait until the sender is a zombie or gone, so the liveness check fails.
  while (!shm::processExited(sender) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  std::vector<uint8_t> got(100, 0);
  Transfer& recv = addTransfer(transfers, false, got, 7);
  CHILD_CHECK_OK(c.post(recv));
  CHILD_CHECK_OK(driveUntilDone(setup.all, {&recv}, 30s));
  const std::string diff = compareBytes(got, pattern(0, 1, 0, 100));
  CHILD_CHECK(diff.empty(), "{}", diff);
  return 0;
}

TEST_F(ShmTest, MessageFromAPeerThatExitedIsStillDelivered) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(runProcesses(2, [&](int rank) { return senderExitsRightAway(rank, id_, shared); }));
}

// The tests below run in this process only: no peer ever shows up.

TransportContext contextFor(const CommIdentity& id, int rank, int nranks, int64_t timeoutMs) {
  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  std::copy(std::begin(id.secret), std::end(id.secret), ctx.secret);
  ctx.commTag = id.commTag;
  ctx.timeoutMs = timeoutMs;
  return ctx;
}

// The opener checks that the creator's header describes the layout its lane
// sizes give: any one field off is refused, naming the lanes.
TEST_F(ShmTest, SegmentWithAnInconsistentHeaderIsRefused) {
  const std::string name = shm::segmentName(id_.secret, id_.commTag, 0, 1);
  shm::Geometry geometry;
  ASSERT_TRUE(shm::geometryFromParams(geometry).ok());
  const std::function<void(shm::SegmentHeader&)> breakings[] = {
      [](shm::SegmentHeader& h) { h.lanes[shm::kMediumLane].slotStride += 64; },
      [](shm::SegmentHeader& h) { h.lanes[shm::kPackedLane].slotBytes = 32; },
      [](shm::SegmentHeader& h) { h.lanes[shm::kPackedLane].slotStride = 64; },
      [](shm::SegmentHeader& h) { h.lanes[shm::kSmallLane].offset += 64; },
      [](shm::SegmentHeader& h) { h.lanes[shm::kSmallLane].slots += 1; },
      [](shm::SegmentHeader& h) { h.lanes[shm::kBulkLane].slots = 0; },
      [](shm::SegmentHeader& h) { h.lanes[shm::kBulkLane].slotBytes = uint64_t{1} << 40; },
      [](shm::SegmentHeader& h) { h.totalBytes -= 64; },
      [](shm::SegmentHeader& h) { h.ranks[1] = 2; },
  };
  for (size_t i = 0; i < std::size(breakings); ++i) {
    SCOPED_TRACE(fmt::format("change {}", i));
    std::shared_ptr<shm::Segment> created;
    ASSERT_TRUE(shm::Segment::create(name, geometry, 0, 1, created).ok());
    std::shared_ptr<shm::Segment> opened;
    bool missing = true;
    ASSERT_TRUE(shm::Segment::open(name, 0, 1, opened, &missing).ok());
    EXPECT_FALSE(missing);
    EXPECT_NE(opened, nullptr);
    breakings[i](created->header());
    opened.reset();
    const Status s = shm::Segment::open(name, 0, 1, opened, &missing);
    ::shm_unlink(name.c_str());
    EXPECT_EQ(s.code(), hclInternalError);
    EXPECT_TRUE(contains(s.message(), "has an unexpected layout")) << s.message();
    EXPECT_EQ(opened, nullptr);
  }
}

TEST_F(ShmTest, SegmentIsUnlinkedWhenFinishNeverRuns) {
  {
    auto transport = makeShmTransport();
    EXPECT_EQ(transport->kind(), TransportKind::Shm);
    ASSERT_TRUE(transport->prepare(contextFor(id_, 0, 3, 1000), {1, 2}).ok());
    const auto segments = segmentsInDevShm(id_);
    ASSERT_EQ(segments.size(), 2u);
    const std::string expected = fmt::format("{}-{:x}-0-1", segmentPrefix(id_), id_.commTag);
    EXPECT_TRUE(segments[0] == expected || segments[1] == expected)
        << segments[0] << " " << segments[1];
    struct stat st {};
    ASSERT_EQ(::stat(("/dev/shm/" + expected).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  EXPECT_TRUE(segmentsInDevShm(id_).empty());
}

TEST_F(ShmTest, PrepareFailsWhenTheSegmentAlreadyExists) {
  auto first = makeShmTransport();
  ASSERT_TRUE(first->prepare(contextFor(id_, 0, 2, 1000), {1}).ok());
  auto second = makeShmTransport();
  const Status s = second->prepare(contextFor(id_, 0, 2, 1000), {1});
  EXPECT_EQ(s.code(), hclSystemError);
  EXPECT_TRUE(contains(s.message(), "O_EXCL")) << s.message();
  // The failed attempt must not remove the first transport's segment.
  EXPECT_EQ(segmentsInDevShm(id_).size(), 1u);
}

TEST_F(ShmTest, HigherRankTimesOutWhenSegmentNeverAppears) {
  auto transport = makeShmTransport();
  std::vector<std::unique_ptr<Connection>> out(2);
  const auto ctx = contextFor(id_, 1, 2, 200);
  ASSERT_TRUE(transport->prepare(ctx, {0}).ok());
  const Status s = transport->connect(ctx, {0}, out);
  EXPECT_EQ(s.code(), hclRemoteError);
  EXPECT_TRUE(contains(s.message(), "timed out")) << s.message();
}

TEST_F(ShmTest, LowerRankTimesOutWhenPeerNeverAttaches) {
  {
    auto transport = makeShmTransport();
    std::vector<std::unique_ptr<Connection>> out(2);
    const auto ctx = contextFor(id_, 0, 2, 200);
    ASSERT_TRUE(transport->prepare(ctx, {1}).ok());
    const Status s = transport->connect(ctx, {1}, out);
    EXPECT_EQ(s.code(), hclRemoteError);
    EXPECT_TRUE(contains(s.message(), "rank 1 to open shm segment")) << s.message();
  }
  EXPECT_TRUE(segmentsInDevShm(id_).empty());
}

TEST_F(ShmTest, ConnectHonoursTheAbortFlag) {
  auto transport = makeShmTransport();
  std::vector<std::unique_ptr<Connection>> out(2);
  std::atomic<bool> abortFlag{true};
  auto ctx = contextFor(id_, 1, 2, 600000);
  ctx.abortFlag = &abortFlag;
  const Status s = transport->connect(ctx, {0}, out);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "aborted")) << s.message();
}

TEST_F(ShmTest, InvalidPeerRankIsRejected) {
  auto transport = makeShmTransport();
  EXPECT_EQ(transport->prepare(contextFor(id_, 0, 2, 1000), {0}).code(), hclInvalidArgument);
  EXPECT_EQ(transport->prepare(contextFor(id_, 0, 2, 1000), {2}).code(), hclInvalidArgument);
}

TEST_F(ShmTest, InvalidSlotParametersAreRejected) {
  ::setenv("HCL_SHM_SLOTS", "0", 1);
  auto transport = makeShmTransport();
  const Status s = transport->prepare(contextFor(id_, 0, 2, 1000), {1});
  ::unsetenv("HCL_SHM_SLOTS");
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_TRUE(contains(s.message(), "HCL_SHM_SLOTS=0")) << s.message();
  EXPECT_TRUE(segmentsInDevShm(id_).empty());
}

TEST_F(ShmTest, InvalidSmallLaneParametersAreRejected) {
  const std::pair<const char*, const char*> bad[] = {
      {"HCL_SHM_PACKED_SLOTS", "4097"},
      {"HCL_SHM_SMALL_SLOTS", "-1"},
      {"HCL_SHM_MEDIUM_SLOTS", "4097"},
      {"HCL_SHM_MEDIUM_SLOT_BYTES", "-5"},
  };
  for (const auto& [name, value] : bad) {
    ::setenv(name, value, 1);
    auto transport = makeShmTransport();
    const Status s = transport->prepare(contextFor(id_, 0, 2, 1000), {1});
    ::unsetenv(name);
    EXPECT_EQ(s.code(), hclInvalidArgument) << name;
    EXPECT_TRUE(contains(s.message(), fmt::format("{}={} is out of range", name, value))) << s.message();
    EXPECT_TRUE(segmentsInDevShm(id_).empty());
  }
}

}  // namespace
}  // namespace hcl::test
