// Connection setup: full meshes, strangers on the listener, missing peers, abort.
#include <sys/socket.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "core/log.h"
#include "tests/unit/params/test_env.h"
#include "tcp_mesh_support.h"
#include "transports/tcp/tcp_hello.h"
#include "transports/tcp/tcp_listener.h"

namespace hcl::test {
namespace {

class TcpMeshTest : public TcpTest, public ::testing::WithParamInterface<int> {};

// Every rank sends its rank number to every peer, so a connection wired to
// the wrong peer is caught.
void checkRouting(MeshSpec& mesh, int rank, RankSide& side) {
  std::vector<int32_t> received(static_cast<size_t>(mesh.nranks), -1);
  std::vector<int32_t> mine(static_cast<size_t>(mesh.nranks), rank);
  Traffic traffic;
  for (int p = 0; p < mesh.nranks; ++p) {
    if (p == rank) continue;
    Connection* c = side.connections[static_cast<size_t>(p)].get();
    ASSERT_TRUE(traffic.send(c, &mine[static_cast<size_t>(p)], 4, 9).ok());
    ASSERT_TRUE(traffic.receive(c, &received[static_cast<size_t>(p)], 4, 9).ok());
  }
  const Status status = traffic.wait();
  ASSERT_TRUE(status.ok()) << status.message();
  for (int p = 0; p < mesh.nranks; ++p)
    if (p != rank) {
      EXPECT_EQ(received[static_cast<size_t>(p)], p) << "rank " << rank;
    }
}

TEST_P(TcpMeshTest, FormsFullMeshWiredToTheRightPeers) {
  const int n = GetParam();
  MeshSpec mesh(n);
  runMesh(mesh, [&](int rank, RankSide& side, std::barrier<>&) {
    EXPECT_FALSE(mesh.infos[static_cast<size_t>(rank)].addresses.empty());
    EXPECT_NE(mesh.infos[static_cast<size_t>(rank)].addresses[0].port, 0);
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      ASSERT_NE(side.connections[static_cast<size_t>(p)], nullptr)
          << "rank " << rank << " peer " << p;
      const std::string text = side.connections[static_cast<size_t>(p)]->describe();
      EXPECT_EQ(text.rfind("tcp 127.0.0.1:", 0), 0u) << text;
      EXPECT_NE(text.find(" via lo"), std::string::npos) << text;
    }
    checkRouting(mesh, rank, side);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, TcpMeshTest, ::testing::Values(2, 3, 4));

// Connects to `where`, sends `bytes`, and reports whether the listener then
// closed the connection (EOF or reset) instead of keeping it.
bool strangerIsDropped(const NetAddress& where, const std::vector<uint8_t>& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address(where.ip), where.port});
  asio::write(socket, asio::buffer(bytes));
  uint8_t byte = 0;
  asio::error_code ec;
  asio::read(socket, asio::buffer(&byte, 1), ec);
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

std::vector<uint8_t> helloBytes(const tcp::Hello& hello) {
  const tcp::HelloBytes raw = tcp::encodeHello(hello);
  return {raw.begin(), raw.end()};
}

TEST_F(TcpTest, StrangersOnTheListenerAreDroppedAndTheMeshStillForms) {
  const int n = 3;
  MeshSpec mesh(n);
  std::barrier<> listened(n + 1);
  std::barrier<> strangersSent(n + 1);
  std::barrier<> barrier(n);
  std::thread strangers([&] {
    listened.arrive_and_wait();
    const NetAddress target = mesh.infos[2].addresses[0];
    std::vector<std::thread> each;
    std::atomic<int> dropped{0};
    auto launch = [&](std::vector<uint8_t> bytes) {
      each.emplace_back([&, bytes] { dropped += strangerIsDropped(target, bytes) ? 1 : 0; });
    };
    TransportContext member = mesh.contextFor(0);
    tcp::Hello wrongSecret = tcp::makeHello(member, 2);
    wrongSecret.secret[0] ^= 1;
    launch(helloBytes(wrongSecret));
    tcp::Hello otherComm = tcp::makeHello(member, 2);
    otherComm.commTag += 1;
    launch(helloBytes(otherComm));
    tcp::Hello unknownRank = tcp::makeHello(member, 2);
    unknownRank.fromRank = 7;
    launch(helloBytes(unknownRank));
    launch(std::vector<uint8_t>(tcp::kHelloBytes, 'x'));
    // Give the strangers a head start on the listener's queue; not a timing check.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    strangersSent.arrive_and_wait();
    for (auto& t : each) t.join();
    EXPECT_EQ(dropped.load(), 4);
  });
  runRanks(n, [&](int rank) {
    RankSide side;
    bool synced = false;
    const Status status = setUpRank(mesh, rank, barrier, side, [&] {
      listened.arrive_and_wait();
      strangersSent.arrive_and_wait();
      synced = true;
    });
    EXPECT_TRUE(synced);
    ASSERT_TRUE(status.ok()) << status.message();
    checkRouting(mesh, rank, side);
    barrier.arrive_and_wait();
  });
  strangers.join();
}

NetAddress loopbackAddress(uint16_t port) {
  NetAddress a;
  a.ifname = "lo";
  a.ip = "127.0.0.1";
  a.port = port;
  a.prefixLen = 8;
  return a;
}

TEST_F(TcpTest, MissingPeerTimesOutWithAnErrorNamingIt) {
  MeshSpec mesh(3);
  mesh.timeoutMs = 300;
  const uint16_t deadPort = closedLoopbackPort();
  mesh.infos[1].addresses.push_back(loopbackAddress(deadPort));
  std::barrier<> barrier(2);
  runRanks(2, [&](int index) {
    const int rank = index == 0 ? 0 : 2;  // rank 1 never shows up
    log::setThreadRank(rank);
    RankSide side;
    const Status status = setUpRank(mesh, rank, barrier, side);
    ASSERT_FALSE(status.ok()) << "rank " << rank;
    EXPECT_EQ(status.code(), hclRemoteError);
    EXPECT_NE(status.message().find("timed out"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("rank 1 "), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find("rank 0 ("), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find("rank 2 ("), std::string::npos) << status.message();
    if (rank == 0) {
      EXPECT_NE(status.message().find("127.0.0.1:" + std::to_string(deadPort)), std::string::npos)
          << status.message();
    }
  });
}

TEST_F(TcpTest, AbortFlagEndsAPendingSetup) {
  // Rank 1 waits to accept rank 0; rank 0 (in another mesh) keeps retrying a dead port.
  for (int rank : {0, 1}) {
    std::atomic<bool> abortFlag{false};
    MeshSpec mesh(2);
    mesh.timeoutMs = 600000;
    mesh.abortFlag = &abortFlag;
    mesh.infos[1 - rank].addresses.push_back(
        loopbackAddress(closedLoopbackPort()));
    std::thread aborter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      abortFlag.store(true);
    });
    std::barrier<> barrier(1);
    RankSide side;
    const Status status = setUpRank(mesh, rank, barrier, side);
    aborter.join();
    ASSERT_FALSE(status.ok()) << "rank " << rank;
    EXPECT_NE(status.message().find("aborted"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("rank " + std::to_string(1 - rank)), std::string::npos)
        << status.message();
  }
}

// Warnings logged while `body` runs with HCL_TCP_CONGESTION refused, and
// how many of them name the refusal.
template <typename Body>
std::pair<std::string, int> logWithRefusedCongestion(Body body) {
  ScratchDir dir;
  const std::string logPath = dir.file("hcl.log");
  ::setenv("HCL_TCP_CONGESTION", "no-such-algorithm", 1);
  ::setenv("HCL_DEBUG", "WARN", 1);
  ::setenv("HCL_DEBUG_FILE", logPath.c_str(), 1);
  log::reset();
  body();
  ::unsetenv("HCL_TCP_CONGESTION");
  ::unsetenv("HCL_DEBUG");
  ::unsetenv("HCL_DEBUG_FILE");
  log::reset();  // closes the file
  const std::string text = readFile(logPath);
  int refusals = 0;
  for (size_t at = 0; (at = text.find("HCL_TCP_CONGESTION=no-such-algorithm refused", at)) != std::string::npos;
       ++at) {
    ++refusals;
  }
  return {text, refusals};
}

// A refused HCL_TCP_CONGESTION is one warning per rank, from its listener;
// the links that meet the same refusal log it at INFO.
TEST_F(TcpTest, RefusedCongestionSettingWarnsOncePerRank) {
  constexpr int kRanks = 4;
  const auto [text, warnings] = logWithRefusedCongestion([&] {
    MeshSpec mesh(kRanks);
    runMesh(mesh, [&](int rank, RankSide& side, std::barrier<>&) { checkRouting(mesh, rank, side); });
  });
  EXPECT_EQ(warnings, kRanks) << text;
  EXPECT_EQ(text.find("refused on the link"), std::string::npos) << text;
}

// An interface with several addresses gets a listener per address; the
// refusal is still one warning, naming each of them.
TEST(TcpListeners, RefusedCongestionOnSeveralAddressesWarnsOnce) {
  std::vector<NetInterface> interfaces(2);
  for (size_t i = 0; i < interfaces.size(); ++i) {
    interfaces[i].name = "lo";
    interfaces[i].ip = "127.0.0." + std::to_string(i + 1);
    interfaces[i].family = AF_INET;
    interfaces[i].prefixLen = 8;
    interfaces[i].loopback = true;
  }
  asio::io_context io;
  std::vector<std::unique_ptr<tcp::TcpListener>> listeners;
  Status status;
  const auto [text, warnings] =
      logWithRefusedCongestion([&] { status = tcp::openListeners(3, io, interfaces, listeners); });
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(listeners.size(), 2u);
  for (const auto& l : listeners) EXPECT_TRUE(l->congestionRefused);
  EXPECT_EQ(warnings, 1) << text;
  EXPECT_NE(text.find("rank 3: HCL_TCP_CONGESTION=no-such-algorithm refused"), std::string::npos) << text;
  EXPECT_NE(text.find("lo (127.0.0.1)"), std::string::npos) << text;
  EXPECT_NE(text.find("lo (127.0.0.2)"), std::string::npos) << text;
}

}  // namespace
}  // namespace hcl::test
