#include "core/bootstrap.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap_root.h"
#include "core/bootstrap_wire.h"
#include "test_env.h"

namespace hcl {
namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;

constexpr int64_t kGenerousMs = 30000;

UniqueIdContents contentsOf(const hclUniqueId& id) {
  UniqueIdContents c;
  EXPECT_TRUE(decodeUniqueId(id, c).ok());
  return c;
}

hclUniqueId freshId() {
  test::ScopedEnv commId("HCL_COMM_ID", std::nullopt);
  test::ScopedEnv ncclCommId("NCCL_COMM_ID", std::nullopt);
  hclUniqueId id;
  const Status st = createUniqueId(&id);
  EXPECT_TRUE(st.ok()) << st.message();
  return id;
}

// Runs fn(rank) on one thread per rank and waits for all of them.
void runRanks(int nranks, const std::function<void(int)>& fn) {
  std::vector<std::jthread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back([&fn, r] { fn(r); });
}

std::vector<uint8_t> blobFor(int rank, int round) {
  std::vector<uint8_t> blob(static_cast<size_t>((rank * 7 + round * 13) % 41));
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>(rank * 31 + round * 5 + i);
  return blob;
}

uint16_t freeLoopbackPort() {
  asio::io_context io;
  tcp::acceptor probe(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return probe.local_endpoint().port();
}

// Forks a child that runs `body` and exits 0 if it returned true, 1 if not.
// Children leave with exit(), which must not wait for the parent's root thread.
pid_t forkChild(const std::function<bool()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) std::exit(body() ? 0 : 1);
  return pid;
}

void expectChildrenSucceeded(const std::vector<pid_t>& children) {
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
}

// A hand-made connection to a root, for playing strangers and broken ranks.
class RawClient {
 public:
  explicit RawClient(const hclUniqueId& id) : socket_(io_) {
    const auto c = contentsOf(id);
    socket_.connect(tcp::endpoint(asio::ip::make_address(c.rootIp), c.rootPort));
  }
  void send(std::span<const uint8_t> bytes) { asio::write(socket_, asio::buffer(bytes.data(), bytes.size())); }
  // False once the connection is gone.
  bool trySend(std::span<const uint8_t> bytes) {
    std::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }
  void sendHello(const UniqueIdContents& c, int nranks, int rank) {
    bootwire::Hello hello;
    std::copy(std::begin(c.secret), std::end(c.secret), hello.secret.begin());
    hello.nranks = nranks;
    hello.rank = rank;
    send(bootwire::encodeHello(hello));
  }
  // Reads one frame; false if the connection ended or nothing came in time.
  bool readFrame(bootwire::Kind& kind, std::vector<uint8_t>& payload) {
    std::array<uint8_t, bootwire::kFrameHeaderBytes> header{};
    if (!readExactly(header.data(), header.size())) return false;
    const auto h = bootwire::decodeFrameHeader(header);
    kind = h.kind;
    payload.resize(h.length);
    return readExactly(payload.data(), payload.size());
  }
  // True once the root closed the connection (without sending anything).
  bool closedByPeer() {
    uint8_t byte = 0;
    std::error_code ec;
    if (!waitReadable()) return false;
    const size_t n = socket_.read_some(asio::buffer(&byte, 1), ec);
    return n == 0 && (ec == asio::error::eof || ec == asio::error::connection_reset);
  }
  // True while the root neither sent anything nor closed the connection.
  bool quiet() {
    pollfd pfd{socket_.native_handle(), POLLIN, 0};
    return ::poll(&pfd, 1, 0) == 0;
  }
  void close() { socket_.close(); }

 private:
  bool waitReadable() {
    pollfd pfd{socket_.native_handle(), POLLIN, 0};
    return ::poll(&pfd, 1, 20000) == 1;
  }
  bool readExactly(uint8_t* p, size_t n) {
    size_t got = 0;
    while (got < n) {
      if (!waitReadable()) return false;
      std::error_code ec;
      got += socket_.read_some(asio::buffer(p + got, n - got), ec);
      if (ec) return false;
    }
    return true;
  }

  asio::io_context io_;
  tcp::socket socket_;
};

void expectRounds(Oob& oob, int nranks, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::vector<uint8_t>> all;
    const Status st = oob.allgather(blobFor(oob.rank(), round), all);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(all.size(), static_cast<size_t>(nranks));
    for (int r = 0; r < nranks; ++r) EXPECT_EQ(all[r], blobFor(r, round)) << "round " << round << " rank " << r;
    ASSERT_TRUE(oob.barrier().ok());
  }
}

// What `from` sends `to` in an alltoall round: distinct for every pair and round.
std::vector<uint8_t> partFor(int from, int to, int round) {
  std::vector<uint8_t> part(static_cast<size_t>((from * 5 + to * 3 + round) % 11));
  for (size_t i = 0; i < part.size(); ++i) part[i] = static_cast<uint8_t>(from * 64 + to * 8 + round + i);
  return part;
}

void expectAlltoallRounds(Oob& oob, int nranks, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::vector<uint8_t>> toEach(static_cast<size_t>(nranks)), fromEach;
    for (int to = 0; to < nranks; ++to) toEach[static_cast<size_t>(to)] = partFor(oob.rank(), to, round);
    const Status st = oob.alltoall(toEach, fromEach);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(fromEach.size(), static_cast<size_t>(nranks));
    for (int from = 0; from < nranks; ++from) {
      EXPECT_EQ(fromEach[static_cast<size_t>(from)], partFor(from, oob.rank(), round)) << "round " << round;
    }
  }
}

class BootstrapRanks : public ::testing::TestWithParam<int> {};

// Allgather rounds and barriers, and alltoall rounds among them, where the
// root routes each part to its rank alone.
TEST_P(BootstrapRanks, RoundsOfBothKindsAndBarriers) {
  const int nranks = GetParam();
  const hclUniqueId id = freshId();
  runRanks(nranks, [&](int rank) {
    std::unique_ptr<Oob> oob;
    const Status st = connectBootstrap(id, nranks, rank, kGenerousMs, nullptr, oob);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(oob->rank(), rank);
    EXPECT_EQ(oob->size(), nranks);
    expectRounds(*oob, nranks, 3);
    expectAlltoallRounds(*oob, nranks, 3);
    expectRounds(*oob, nranks, 3);
    std::vector<std::vector<uint8_t>> wrongCount(static_cast<size_t>(nranks) + 1), out;
    EXPECT_EQ(oob->alltoall(wrongCount, out).code(), hclInternalError);

    // One round large enough to need many partial socket writes.
    std::vector<uint8_t> big(rank == 0 ? (3u << 20) : 1, static_cast<uint8_t>(rank + 1));
    std::vector<std::vector<uint8_t>> all;
    ASSERT_TRUE(oob->allgather(big, all).ok());
    ASSERT_EQ(all.size(), static_cast<size_t>(nranks));
    EXPECT_EQ(all[0].size(), 3u << 20);
    for (int r = 0; r < nranks; ++r) EXPECT_EQ(all[r].back(), static_cast<uint8_t>(r + 1));
  });
}

TEST(Bootstrap, RanksMixingAllgatherAndAlltoallInARoundFail) {
  const hclUniqueId id = freshId();
  runRanks(2, [&](int rank) {
    std::unique_ptr<Oob> oob;
    ASSERT_TRUE(connectBootstrap(id, 2, rank, kGenerousMs, nullptr, oob).ok());
    std::vector<std::vector<uint8_t>> out;
    const Status st = rank == 0 ? oob->allgather({1, 2}, out) : oob->alltoall({{1}, {2}}, out);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("disagree on the kind of bootstrap round"), std::string::npos) << st.message();
  });
}

// An Oob with only an allgather gets alltoall from the base class, over
// it. This one's allgather hands back what every rank contributes, known in
// advance, and checks that the rank's own contribution is among it.
class KnownOob final : public Oob {
 public:
  KnownOob(int rank, std::vector<std::vector<uint8_t>> round) : rank_(rank), round_(std::move(round)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(round_.size()); }
  Status allgather(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>& all) override {
    if (mine != round_[static_cast<size_t>(rank_)]) return internalError("unexpected contribution");
    all = round_;
    return {};
  }

 private:
  int rank_;
  std::vector<std::vector<uint8_t>> round_;
};

TEST(Oob, AlltoallOverAllgatherByDefault) {
  constexpr int kRanks = 3;
  std::vector<std::vector<std::vector<uint8_t>>> toEach(kRanks, std::vector<std::vector<uint8_t>>(kRanks));
  std::vector<std::vector<uint8_t>> round(kRanks);
  for (int from = 0; from < kRanks; ++from) {
    for (int to = 0; to < kRanks; ++to) toEach[from][to] = partFor(from, to, 0);
    round[from] = bootwire::encodeParts(toEach[from]);
  }
  for (int rank = 0; rank < kRanks; ++rank) {
    KnownOob oob(rank, round);
    std::vector<std::vector<uint8_t>> fromEach;
    const Status st = oob.alltoall(toEach[rank], fromEach);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(fromEach.size(), static_cast<size_t>(kRanks));
    for (int from = 0; from < kRanks; ++from) EXPECT_EQ(fromEach[from], partFor(from, rank, 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, BootstrapRanks, ::testing::Values(1, 2, 3, 5));

TEST(Bootstrap, WorksOverIpv6) {
  test::ScopedEnv ifname("HCL_SOCKET_IFNAME", "=lo");
  test::ScopedEnv family("HCL_SOCKET_FAMILY", "AF_INET6");
  test::ScopedEnv commId("HCL_COMM_ID", std::nullopt);
  test::ScopedEnv ncclCommId("NCCL_COMM_ID", std::nullopt);
  hclUniqueId id;
  const Status created = createUniqueId(&id);
  if (!created.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << created.message();
  EXPECT_EQ(contentsOf(id).rootIp, "::1");
  runRanks(2, [&](int rank) {
    std::unique_ptr<Oob> oob;
    const Status st = connectBootstrap(id, 2, rank, kGenerousMs, nullptr, oob);
    ASSERT_TRUE(st.ok()) << st.message();
    expectRounds(*oob, 2, 2);
  });
}

TEST(Bootstrap, RootExitsOnceEveryRankLeft) {
  const hclUniqueId id = freshId();
  const uint16_t port = contentsOf(id).rootPort;
  EXPECT_TRUE(bootstrapRootRunning(port));
  runRanks(2, [&](int rank) {
    std::unique_ptr<Oob> oob;
    ASSERT_TRUE(connectBootstrap(id, 2, rank, kGenerousMs, nullptr, oob).ok());
    ASSERT_TRUE(oob->barrier().ok());
  });
  const auto giveUp = std::chrono::steady_clock::now() + 20s;
  while (bootstrapRootRunning(port) && std::chrono::steady_clock::now() < giveUp) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(bootstrapRootRunning(port));
}

// True when `rank` joins and `rounds` allgathers bring every rank's blob.
bool joinAndGather(const hclUniqueId& id, int nranks, int rank, int rounds) {
  std::unique_ptr<Oob> oob;
  bool ok = connectBootstrap(id, nranks, rank, kGenerousMs, nullptr, oob).ok();
  for (int round = 0; ok && round < rounds; ++round) {
    std::vector<std::vector<uint8_t>> all;
    ok = oob->allgather(blobFor(rank, round), all).ok() && all.size() == static_cast<size_t>(nranks);
    for (int r = 0; ok && r < nranks; ++r) ok = all[static_cast<size_t>(r)] == blobFor(r, round);
  }
  return ok;
}

// The usual launch: one process makes the id, forked children join with it.
TEST(Bootstrap, RanksInForkedProcesses) {
  constexpr int kRanks = 3;
  const hclUniqueId id = freshId();
  // The children start once all are forked: a fork while the root thread
  // serves the first child could copy an allocator lock it holds (the
  // sanitizers' allocators are not fork-safe), and the child would hang.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int rank = 1; rank < kRanks; ++rank) {
    children.push_back(forkChild([&] {
      ::close(go[1]);
      char byte = 0;
      return ::read(go[0], &byte, 1) == 1 && joinAndGather(id, kRanks, rank, 3);
    }));
    ASSERT_GE(children.back(), 0);
  }
  ::close(go[0]);
  const std::string bytes(kRanks - 1, 'g');
  ASSERT_EQ(::write(go[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(go[1]);
  {
    std::unique_ptr<Oob> oob;
    const Status st = connectBootstrap(id, kRanks, 0, kGenerousMs, nullptr, oob);
    ASSERT_TRUE(st.ok()) << st.message();
    for (int round = 0; round < 3; ++round) {
      std::vector<std::vector<uint8_t>> all;
      ASSERT_TRUE(oob->allgather(blobFor(0, round), all).ok());
      ASSERT_EQ(all.size(), static_cast<size_t>(kRanks));
      for (int r = 0; r < kRanks; ++r) EXPECT_EQ(all[r], blobFor(r, round));
    }
  }
  expectChildrenSucceeded(children);
}

TEST(Bootstrap, CommIdModeRank0StartsTheRoot) {
  const std::string address = "127.0.0.1:" + std::to_string(freeLoopbackPort());
  test::ScopedEnv commId("HCL_COMM_ID", address);
  constexpr int kRanks = 3;
  // Twice on the same address: the second root must take over the port.
  for (int generation = 0; generation < 2; ++generation) {
    hclUniqueId id;
    ASSERT_TRUE(createUniqueId(&id).ok());
    ASSERT_TRUE(contentsOf(id).rootStartedByRank0);
    runRanks(kRanks, [&](int rank) {
      hclUniqueId own;  // every rank computes the id by itself
      ASSERT_TRUE(createUniqueId(&own).ok());
      // The other ranks come first and must wait for rank 0's root.
      if (rank == 0) std::this_thread::sleep_for(200ms);
      std::unique_ptr<Oob> oob;
      const Status st = connectBootstrap(own, kRanks, rank, kGenerousMs, nullptr, oob);
      ASSERT_TRUE(st.ok()) << st.message();
      expectRounds(*oob, kRanks, 3);
    });
  }
}

// Rank 0 hosts the root of an HCL_COMM_ID id; when its own join fails (here
// aborted before it began, with no timeout), it stops that root, so a retry
// in the same process can bind the address again.
TEST(Bootstrap, CommIdRank0WhoseJoinFailsFreesTheAddress) {
  test::ScopedEnv commId("HCL_COMM_ID", "127.0.0.1:" + std::to_string(freeLoopbackPort()));
  hclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  std::atomic<bool> aborted{true};
  std::unique_ptr<Oob> oob;
  const Status failed = connectBootstrap(id, 2, 0, 0 /* no timeout */, &aborted, oob);
  ASSERT_FALSE(failed.ok());
  const Status retried = connectBootstrap(id, 1, 0, kGenerousMs, nullptr, oob);
  EXPECT_TRUE(retried.ok()) << retried.message();
}

TEST(Bootstrap, CommIdRootBindFailureNamesTheAddress) {
  test::ScopedEnv commId("HCL_COMM_ID", "192.0.2.123:4567");  // TEST-NET: not an address of this host
  hclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  std::unique_ptr<Oob> oob;
  const Status st = connectBootstrap(id, 2, 0, 2000, nullptr, oob);
  if (st.ok()) GTEST_SKIP() << "192.0.2.123 is an address of this host";
  EXPECT_EQ(st.code(), hclSystemError);
  EXPECT_NE(st.message().find("192.0.2.123:4567"), std::string::npos) << st.message();
}

TEST(Bootstrap, StrangersAreDroppedWithoutDisturbingTheRanks) {
  constexpr int kRanks = 3;
  const hclUniqueId id = freshId();
  const UniqueIdContents contents = contentsOf(id);
  std::atomic<bool> strangersDone{false};
  runRanks(kRanks + 1, [&](int slot) {
    if (slot == kRanks) {
      struct SetWhenDone {
        std::atomic<bool>& flag;
        ~SetWhenDone() { flag = true; }
      } setWhenDone{strangersDone};
      UniqueIdContents wrong = contents;
      wrong.secret[3] ^= 0x40;
      RawClient wrongSecret(id);
      wrongSecret.sendHello(wrong, kRanks, 1);
      EXPECT_TRUE(wrongSecret.closedByPeer());

      RawClient garbage(id);
      const std::string http = "GET / HTTP/1.0\r\n\r\n";
      garbage.send(std::span(reinterpret_cast<const uint8_t*>(http.data()), http.size()));
      EXPECT_TRUE(garbage.closedByPeer());
      return;
    }
    // Rank 0 joins last, after every stranger was dealt with.
    if (slot == 0)
      while (!strangersDone) std::this_thread::sleep_for(5ms);
    std::unique_ptr<Oob> oob;
    const Status st = connectBootstrap(id, kRanks, slot, kGenerousMs, nullptr, oob);
    ASSERT_TRUE(st.ok()) << st.message();
    expectRounds(*oob, kRanks, 2);
  });
}

TEST(Bootstrap, DuplicateRankIsRejectedWithoutDisturbingTheRanks) {
  const hclUniqueId id = freshId();
  const UniqueIdContents contents = contentsOf(id);
  RawClient first(id);
  first.sendHello(contents, 2, 0);
  // Connects after the first hello was sent, so the root sees it second.
  std::unique_ptr<Oob> second;
  const Status st = connectBootstrap(id, 2, 0, kGenerousMs, nullptr, second);
  EXPECT_EQ(st.code(), hclRemoteError) << st.message();
  EXPECT_NE(st.message().find("rank 0 joined twice"), std::string::npos) << st.message();
  EXPECT_EQ(second, nullptr);
  // The first rank 0 is still in: once rank 1 arrives, the join completes.
  std::jthread rank1([&] {
    std::unique_ptr<Oob> oob;
    const Status joined = connectBootstrap(id, 2, 1, kGenerousMs, nullptr, oob);
    EXPECT_TRUE(joined.ok()) << joined.message();
  });
  bootwire::Kind kind{};
  std::vector<uint8_t> payload;
  ASSERT_TRUE(first.readFrame(kind, payload));
  EXPECT_EQ(kind, bootwire::Kind::JoinOk);
}

// Reads one frame from `client` and returns its error text ("" if it was not an error).
std::string errorFrameText(RawClient& client) {
  bootwire::Kind kind{};
  std::vector<uint8_t> payload;
  if (!client.readFrame(kind, payload) || kind != bootwire::Kind::Error) return "";
  bootwire::ErrorKind errorKind{};
  std::string text;
  if (!bootwire::decodeError(payload, errorKind, text) || errorKind != bootwire::ErrorKind::Fatal) return "";
  return text;
}

TEST(Bootstrap, WrongCommunicatorSizeFailsEveryRankAtOnce) {
  hclUniqueId id;
  {
    test::ScopedEnv timeout("HCL_TIMEOUT_MS", "60000");  // far beyond what the test waits
    id = freshId();
  }
  const UniqueIdContents contents = contentsOf(id);
  // Sent from one thread in this order, the hellos reach the root in this order.
  RawClient rank0(id);
  rank0.sendHello(contents, 2, 0);
  RawClient wrongSize(id);
  wrongSize.sendHello(contents, 6, 1);
  const std::string told = errorFrameText(wrongSize);
  EXPECT_NE(told.find("nranks=6"), std::string::npos) << told;
  EXPECT_TRUE(wrongSize.closedByPeer());
  // The rank already in hears the same reason, not a timeout later.
  EXPECT_EQ(errorFrameText(rank0), told);
  // So does a correct rank arriving afterwards: the communicator can no longer form.
  std::unique_ptr<Oob> oob;
  const Status late = connectBootstrap(id, 2, 1, kGenerousMs, nullptr, oob);
  EXPECT_EQ(late.code(), hclRemoteError) << late.message();
  EXPECT_NE(late.message().find(told), std::string::npos) << late.message();
}

TEST(Bootstrap, CrashedRankFailsTheOthersWithAnError) {
  constexpr int kRanks = 3;
  const hclUniqueId id = freshId();
  const UniqueIdContents contents = contentsOf(id);
  runRanks(kRanks, [&](int rank) {
    if (rank == 2) {
      // Joins properly, then vanishes without saying bye.
      RawClient crashing(id);
      crashing.sendHello(contents, kRanks, rank);
      bootwire::Kind kind{};
      std::vector<uint8_t> payload;
      ASSERT_TRUE(crashing.readFrame(kind, payload));
      EXPECT_EQ(kind, bootwire::Kind::JoinOk);
      crashing.close();
      return;
    }
    std::unique_ptr<Oob> oob;
    ASSERT_TRUE(connectBootstrap(id, kRanks, rank, 5000, nullptr, oob).ok());
    std::vector<std::vector<uint8_t>> all;
    const Status st = oob->allgather(blobFor(rank, 0), all);
    EXPECT_EQ(st.code(), hclRemoteError) << st.message();
    EXPECT_NE(st.message().find("rank 2 left the bootstrap"), std::string::npos) << st.message();
    // The failure sticks.
    EXPECT_FALSE(oob->barrier().ok());
  });
}

// Rank 1 leaves (says bye) while the others start another round, after
// giving up for a failure of its own where `reason` is set: the others
// fail, quoting the reason where there is one.
void expectRankLeavingMidRoundFailsTheOthers(const std::string& reason) {
  constexpr int kRanks = 3;
  const hclUniqueId id = freshId();
  runRanks(kRanks, [&](int rank) {
    std::unique_ptr<Oob> oob;
    ASSERT_TRUE(connectBootstrap(id, kRanks, rank, 5000, nullptr, oob).ok());
    ASSERT_TRUE(oob->barrier().ok());
    if (rank == 1) {
      if (!reason.empty()) oob->leaveFailed(systemError(reason));
      return;
    }
    std::vector<std::vector<uint8_t>> all;
    const Status st = oob->allgather(blobFor(rank, 1), all);
    EXPECT_EQ(st.code(), hclRemoteError) << st.message();
    const std::string want = reason.empty() ? "rank 1 left the bootstrap" : "rank 1 left the bootstrap, failing: " + reason;
    EXPECT_NE(st.message().find(want), std::string::npos) << st.message();
    if (reason.empty()) {
      EXPECT_EQ(st.message().find("failing"), std::string::npos) << st.message();
    }
    // This rank's failure came from the bootstrap: it has nothing to add.
    oob->leaveFailed(st);
  });
}

TEST(Bootstrap, RankLeavingMidRoundFailsTheOthers) { expectRankLeavingMidRoundFailsTheOthers(""); }

TEST(Bootstrap, RankThatGivesUpTellsTheOthersWhy) {
  expectRankLeavingMidRoundFailsTheOthers("rank 1: HCL_NET='IB': no RDMA device");
}

// A bye whose reason is longer than a bye may carry is a malformed
// message: the root fails the others naming it, and keeps none of it.
TEST(Bootstrap, AByeTooLongFailsTheOthers) {
  const hclUniqueId id = freshId();
  const UniqueIdContents contents = contentsOf(id);
  runRanks(2, [&](int rank) {
    if (rank == 1) {
      RawClient client(id);
      client.sendHello(contents, 2, rank);
      bootwire::Kind kind{};
      std::vector<uint8_t> payload;
      ASSERT_TRUE(client.readFrame(kind, payload));
      EXPECT_EQ(kind, bootwire::Kind::JoinOk);
      std::vector<uint8_t> bye;
      bootwire::appendFrame(bye, bootwire::Kind::Bye, std::vector<uint8_t>(bootwire::kMaxByeReasonBytes + 1, 'x'));
      client.send(bye);
      return;
    }
    std::unique_ptr<Oob> oob;
    ASSERT_TRUE(connectBootstrap(id, 2, rank, 5000, nullptr, oob).ok());
    std::vector<std::vector<uint8_t>> all;
    const Status st = oob->allgather(blobFor(rank, 0), all);
    EXPECT_EQ(st.code(), hclRemoteError) << st.message();
    EXPECT_NE(st.message().find("rank 1 sent a malformed bootstrap message (kind 2, length 2049)"), std::string::npos)
        << st.message();
  });
}

TEST(Bootstrap, MissingRankTimesOutOnTheClient) {
  const hclUniqueId id = freshId();
  runRanks(2, [&](int rank) {
    // Rank 0 gives up first; rank 1 hears from the root which rank never came.
    std::unique_ptr<Oob> oob;
    const Status st = connectBootstrap(id, 3, rank, rank == 0 ? 500 : kGenerousMs, nullptr, oob);
    EXPECT_EQ(oob, nullptr);
    if (rank == 0) {
      EXPECT_EQ(st.code(), hclRemoteError) << st.message();
      EXPECT_NE(st.message().find("bootstrap"), std::string::npos) << st.message();
      EXPECT_NE(st.message().find("500 ms"), std::string::npos) << st.message();
    } else {
      EXPECT_EQ(st.code(), hclRemoteError) << st.message();
      EXPECT_NE(st.message().find("rank 0 left the bootstrap while ranks 2 had not joined"), std::string::npos)
          << st.message();
    }
  });
}

TEST(Bootstrap, MissingRankTimesOutOnTheRoot) {
  hclUniqueId id;
  {
    test::ScopedEnv timeout("HCL_TIMEOUT_MS", "300");
    id = freshId();
  }
  runRanks(3, [&](int rank) {
    if (rank == 2) return;
    std::unique_ptr<Oob> oob;
    const Status st = connectBootstrap(id, 3, rank, kGenerousMs, nullptr, oob);
    EXPECT_EQ(st.code(), hclRemoteError) << st.message();
    EXPECT_NE(st.message().find("timed out waiting for ranks 2"), std::string::npos) << st.message();
  });
}

// With one timeout everywhere the ranks' own deadlines run out about when
// the root's does (a little earlier: the root counts from the first join);
// they wait a little longer for its verdict, which names the missing rank.
// Where rank 0 hosts the root (HCL_COMM_ID), its giving up must not stop
// the root before the verdict reaches the others.
TEST(Bootstrap, MissingRankIsNamedWithOneTimeoutEverywhere) {
  for (const bool rank0Hosts : {false, true}) {
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE(std::string(rank0Hosts ? "rank 0 hosts the root" : "a root of its own") + ", round " +
                   std::to_string(round));
      // Every rank's, and the root's wherever it runs.
      test::ScopedEnv timeout("HCL_TIMEOUT_MS", "300");
      hclUniqueId id;
      if (rank0Hosts) {
        test::ScopedEnv commId("HCL_COMM_ID", "127.0.0.1:" + std::to_string(freeLoopbackPort()));
        ASSERT_TRUE(createUniqueId(&id).ok());
      } else {
        id = freshId();
      }
      runRanks(3, [&](int rank) {
        if (rank == 2) return;
        std::unique_ptr<Oob> oob;
        const Status st = connectBootstrap(id, 3, rank, 300, nullptr, oob);
        EXPECT_EQ(st.code(), hclRemoteError) << st.message();
        EXPECT_NE(st.message().find("timed out waiting for ranks 2"), std::string::npos) << st.message();
      });
    }
  }
}

TEST(Bootstrap, AbortFlagEndsAWaitingJoin) {
  const hclUniqueId id = freshId();
  std::atomic<bool> abortFlag{false};
  std::jthread aborter([&] {
    std::this_thread::sleep_for(200ms);
    abortFlag = true;
  });
  std::unique_ptr<Oob> oob;
  const Status st = connectBootstrap(id, 2, 0, 0 /* no timeout */, &abortFlag, oob);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("abort"), std::string::npos) << st.message();
  EXPECT_EQ(oob, nullptr);
}

TEST(Bootstrap, AbortFlagEndsConnectRetries) {
  test::ScopedEnv commId("HCL_COMM_ID", "127.0.0.1:" + std::to_string(freeLoopbackPort()));
  hclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  std::atomic<bool> abortFlag{false};
  std::jthread aborter([&] {
    std::this_thread::sleep_for(200ms);
    abortFlag = true;
  });
  std::unique_ptr<Oob> oob;
  // Rank 0 never starts the root, so rank 1 keeps being refused.
  const Status st = connectBootstrap(id, 2, 1, 0, &abortFlag, oob);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("abort"), std::string::npos) << st.message();
}

// Takes every file descriptor this process may still open, and gives them
// back on release() or destruction.
class DescriptorHog {
 public:
  DescriptorHog() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(highestOpenFd() + 8);
    ::setrlimit(RLIMIT_NOFILE, &low);
    for (int fd = ::dup(0); fd >= 0; fd = ::dup(0)) held_.push_back(fd);
    exhausted_ = errno == EMFILE;
  }
  ~DescriptorHog() { release(); }
  bool exhausted() const { return exhausted_; }
  void release() {
    for (int fd : held_) ::close(fd);
    held_.clear();
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }

 private:
  static int highestOpenFd() {
    int highest = 2;
    for (int fd = 0; fd < 65536; ++fd) {
      if (::fcntl(fd, F_GETFD) != -1) highest = fd;
    }
    return highest;
  }
  rlimit saved_{};
  std::vector<int> held_;
  bool exhausted_ = false;
};

// Sends this process's stderr to a new file named from `pathTemplate`
// (mkstemp's XXXXXX filled in) until destruction.
class StderrToFile {
 public:
  explicit StderrToFile(char* pathTemplate) : fd_(::mkstemp(pathTemplate)) {
    if (fd_ < 0) return;
    std::fflush(stderr);
    saved_ = ::dup(2);
    ::dup2(fd_, 2);
  }
  ~StderrToFile() {
    if (fd_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    ::close(fd_);
  }
  bool ok() const { return fd_ >= 0 && saved_ >= 0; }

 private:
  int fd_;
  int saved_ = -1;
};

// A root that cannot accept (no descriptors left) pauses and tries again
// instead of spinning or giving up; the ranks get through once descriptors
// are free again.
TEST(Bootstrap, RootWaitsOutRunningOutOfDescriptors) {
  constexpr int kRanks = 2;
  const hclUniqueId id = freshId();
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  std::vector<pid_t> children;
  for (int rank = 0; rank < kRanks; ++rank) {
    children.push_back(forkChild([&] {
      char go = 0;
      return ::read(gate[0], &go, 1) == 1 && joinAndGather(id, kRanks, rank, 1);
    }));
    ASSERT_GE(children.back(), 0);
  }
  char logPath[] = "/tmp/hcl_accept_XXXXXX";
  {
    // The root's warning goes to stderr: keep it in a file for the check below.
    StderrToFile capture(logPath);
    ASSERT_TRUE(capture.ok());
    DescriptorHog hog;
    ASSERT_TRUE(hog.exhausted());
    const char go[kRanks] = {1, 1};
    ASSERT_EQ(::write(gate[1], go, kRanks), kRanks);
    std::this_thread::sleep_for(500ms);  // the ranks connect; the root cannot accept them yet
  }
  expectChildrenSucceeded(children);
  ::close(gate[0]);
  ::close(gate[1]);
  std::ifstream in(logPath);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(logPath);
  EXPECT_NE(log.find("accept failed"), std::string::npos) << log;
  EXPECT_NE(log.find("retrying every 100 ms"), std::string::npos) << log;
}

// Virtual memory this process has mapped now, from /proc/self/status.
size_t mappedBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  size_t kib = 0;
  while (status >> key) {
    if (key == "VmSize:" && status >> kib) return kib * 1024;
  }
  return 0;
}

// In a forked child: hosts a root, joins it as the only rank, caps the
// child's address space at what it maps plus 16 MiB, then sends the header
// of a blob of `length` bytes and `sent` bytes of it. True if the root then
// behaved as `expectClosed` says: closed the connection (it could not hold
// what came), or kept it open (the rest may yet arrive).
bool rootFacingAHugeBlob(uint64_t length, size_t sent, bool expectClosed) {
  const hclUniqueId id = freshId();
  const UniqueIdContents contents = contentsOf(id);
  RawClient client(id);
  client.sendHello(contents, 1, 0);
  bootwire::Kind kind{};
  std::vector<uint8_t> payload;
  if (!client.readFrame(kind, payload) || kind != bootwire::Kind::JoinOk) return false;
  std::vector<uint8_t> header;
  bootwire::putU32(header, static_cast<uint32_t>(bootwire::Kind::Blob));
  bootwire::putU64(header, length);
  const std::vector<uint8_t> piece(size_t{1} << 20, 0x5a);
  const rlimit capped{mappedBytes() + (size_t{16} << 20), RLIM_INFINITY};
  if (::setrlimit(RLIMIT_AS, &capped) != 0) return false;
  client.send(header);
  // A root that gave up resets the connection; the sending just stops then.
  for (size_t done = 0; done < sent && client.trySend(std::span(piece).first(std::min(piece.size(), sent - done)));
       done += piece.size()) {
  }
  if (expectClosed) return client.closedByPeer();
  std::this_thread::sleep_for(300ms);  // time for the root to take the header in
  return client.quiet();
}

// A rank (it holds the secret) sending a broken header must not end the
// process that hosts the root: not by the root reserving what the header
// claims, nor by any allocation failing in the root's thread.
TEST(Bootstrap, RootSurvivesBlobsItCannotHold) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "caps the address space, which the sanitizers' shadow memory does not allow";
#endif
  // 8 GiB announced, 4 KiB sent: nothing is reserved on the header's word.
  const pid_t headerOnly = forkChild([] { return rootFacingAHugeBlob(uint64_t{1} << 33, 4096, false); });
  // 160 MiB of a 1 GiB blob sent with far less room: the root gives up on
  // the bootstrap and closes the connection, and the process lives on.
  const pid_t noRoom = forkChild([] { return rootFacingAHugeBlob(uint64_t{1} << 30, size_t{160} << 20, true); });
  ASSERT_GE(headerOnly, 0);
  ASSERT_GE(noRoom, 0);
  expectChildrenSucceeded({headerOnly, noRoom});
}

// A listener that is not a root, at the address a rank was given: the
// rank's memory must not follow the lengths it is sent.
TEST(Bootstrap, AFrameLongerThanItsKindAllowsIsRefused) {
  asio::io_context io;
  tcp::acceptor fakeRoot(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  test::ScopedEnv commId("HCL_COMM_ID", "127.0.0.1:" + std::to_string(fakeRoot.local_endpoint().port()));
  hclUniqueId id;
  ASSERT_TRUE(createUniqueId(&id).ok());
  std::jthread root([&] {
    tcp::socket socket(io);
    fakeRoot.accept(socket);
    std::array<uint8_t, bootwire::kHelloBytes> hello{};
    asio::read(socket, asio::buffer(hello));
    std::vector<uint8_t> joinOk;
    bootwire::putU32(joinOk, static_cast<uint32_t>(bootwire::Kind::JoinOk));
    bootwire::putU64(joinOk, uint64_t{1} << 30);
    asio::write(socket, asio::buffer(joinOk));
    uint8_t byte = 0;
    std::error_code ec;
    socket.read_some(asio::buffer(&byte, 1), ec);  // until the rank hangs up
  });
  std::unique_ptr<Oob> oob;
  // Rank 1: rank 0 would host the root at that address itself.
  const Status st = connectBootstrap(id, 2, 1, 3000, nullptr, oob);
  EXPECT_EQ(st.code(), hclInternalError) << st.message();
  EXPECT_NE(st.message().find("malformed message (kind 10, 1073741824 bytes)"), std::string::npos) << st.message();
  EXPECT_EQ(oob, nullptr);
}

// The root's error texts stay within what a rank accepts from it.
TEST(BootstrapWire, AnErrorTextIsCutToWhatRanksAccept) {
  const std::vector<uint8_t> payload = bootwire::encodeError(bootwire::ErrorKind::Fatal, std::string(100000, 'x'));
  EXPECT_EQ(payload.size(), bootwire::maxFrameBytesFromRoot(bootwire::Kind::Error));
  bootwire::ErrorKind kind{};
  std::string text;
  ASSERT_TRUE(bootwire::decodeError(payload, kind, text));
  EXPECT_EQ(text, std::string(payload.size() - 4, 'x'));
}

TEST(BootstrapWire, PartsKeepOnlyWhatThereIsAndRefuseWhatCannotBe) {
  const std::vector<std::vector<uint8_t>> byRank = {{}, {7, 8}, {}, {9}};
  const std::vector<uint8_t> wire = bootwire::encodeParts(byRank);
  EXPECT_EQ(wire.size(), 4u + (12 + 2) + (12 + 1)) << "empty parts take no room";
  std::vector<std::vector<uint8_t>> back;
  ASSERT_TRUE(bootwire::decodeParts(wire, 4, back));
  EXPECT_EQ(back, byRank);
  EXPECT_FALSE(bootwire::decodeParts(wire, 3, back)) << "rank 3 of 3";
  std::vector<uint8_t> cut(wire.begin(), wire.end() - 1);
  EXPECT_FALSE(bootwire::decodeParts(cut, 4, back)) << "truncated";
  std::vector<uint8_t> twice;
  bootwire::putU32(twice, 2);
  for (int i = 0; i < 2; ++i) {
    bootwire::putU32(twice, 1);
    bootwire::putU64(twice, 0);
  }
  EXPECT_FALSE(bootwire::decodeParts(twice, 4, back)) << "one rank twice";
}

TEST(BootstrapWire, ARoundResultCountingMoreEntriesThanItHoldsIsMalformed) {
  std::vector<uint8_t> payload;
  bootwire::putU32(payload, 0xffffffffu);
  bootwire::putU64(payload, 0);
  std::vector<std::vector<uint8_t>> all;
  EXPECT_FALSE(bootwire::decodeGather(payload, all));
  payload.clear();
  bootwire::putU32(payload, 1);
  bootwire::putU64(payload, 0);
  EXPECT_TRUE(bootwire::decodeGather(payload, all));
  EXPECT_EQ(all.size(), 1u);
}

TEST(Bootstrap, InvalidArguments) {
  const hclUniqueId id = freshId();
  std::unique_ptr<Oob> oob;
  EXPECT_EQ(connectBootstrap(id, 2, 2, 1000, nullptr, oob).code(), hclInvalidArgument);
  EXPECT_EQ(connectBootstrap(id, 0, 0, 1000, nullptr, oob).code(), hclInvalidArgument);
  EXPECT_EQ(connectBootstrap(id, 2, -1, 1000, nullptr, oob).code(), hclInvalidArgument);
  hclUniqueId bad{};
  EXPECT_EQ(connectBootstrap(bad, 1, 0, 1000, nullptr, oob).code(), hclInvalidArgument);
}

}  // namespace
}  // namespace hcl
