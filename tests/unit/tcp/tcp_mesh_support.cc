#include "tcp_mesh_support.h"

#include <stdlib.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <chrono>
#include <thread>

#include "core/log.h"

namespace hcl::test {

void TcpTest::SetUp() {
  ::setenv("HCL_SOCKET_IFNAME", "lo", 1);
  ::setenv("HCL_SOCKET_FAMILY", "AF_INET", 1);
}

MeshSpec::MeshSpec(int n)
    : nranks(n), infos(static_cast<size_t>(n)), links(static_cast<size_t>(n)) {
  for (int r = 0; r < n; ++r) infos[static_cast<size_t>(r)].rank = r;
  for (Link& link : links) {
    link.kind = TransportKind::Tcp;
    link.listenerAddress = 0;
    link.reason = "test";
  }
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(0xa0 + i);
}

TransportContext MeshSpec::contextFor(int rank) const {
  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.peers = &infos;
  ctx.links = &links;
  std::copy(secret.begin(), secret.end(), ctx.secret);
  ctx.commTag = commTag;
  ctx.timeoutMs = timeoutMs;
  ctx.abortFlag = abortFlag;
  return ctx;
}

void runRanks(int nranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&body, r] {
      log::setThreadRank(r);
      body(r);
    });
  }
  for (auto& t : threads) t.join();
}

Status setUpRank(MeshSpec& mesh, int rank, std::barrier<>& barrier, RankSide& out,
                 const std::function<void()>& beforeConnect) {
  out.transport = mesh.streams.empty() ? makeTcpTransport()
                                       : makeTcpTransport(mesh.streams[static_cast<size_t>(rank)]);
  const TransportContext ctx = mesh.contextFor(rank);
  Status status = out.transport->listen(ctx, mesh.infos[static_cast<size_t>(rank)]);
  std::vector<int> peers;
  for (int p = 0; p < mesh.nranks; ++p)
    if (p != rank) peers.push_back(p);
  if (status.ok()) status = out.transport->prepare(ctx, peers);
  barrier.arrive_and_wait();
  if (beforeConnect) beforeConnect();
  if (status.ok()) status = out.transport->connect(ctx, peers, out.connections);
  barrier.arrive_and_wait();
  out.transport->finish();
  return status;
}

void runMesh(MeshSpec& mesh, const RankBody& body) {
  std::barrier<> barrier(mesh.nranks);
  runRanks(mesh.nranks, [&](int rank) {
    RankSide side;
    const Status setup = setUpRank(mesh, rank, barrier, side);
    ASSERT_TRUE(setup.ok()) << setup.message();
    body(rank, side, barrier);
    barrier.arrive_and_wait();
  });
}

void runPair(MeshSpec& mesh, const PairBody& body) {
  runMesh(mesh, [&](int rank, RankSide& side, std::barrier<>& barrier) {
    body(rank, side.connections[static_cast<size_t>(1 - rank)], barrier);
  });
}

Status waitAll(const std::vector<Connection*>& connections,
               const std::vector<Transfer*>& transfers) {
  // Only a guard against a hung test, not a timing check.
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  for (;;) {
    bool madeProgress = false;
    for (Connection* c : connections) HCL_TRY(c->progress(&madeProgress));
    if (std::all_of(transfers.begin(), transfers.end(),
                    [](const Transfer* t) { return t->done(); }))
      return {};
    if (std::chrono::steady_clock::now() > giveUp)
      return internalError("test: transfers never finished");
    if (!madeProgress) std::this_thread::yield();
  }
}

std::vector<uint8_t> pattern(int from, int to, int index, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  uint32_t x = static_cast<uint32_t>(from * 7919 + to * 104729 + index * 31 + 1);
  for (auto& b : data) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return data;
}

Status Traffic::post(Connection* c, bool isSend, void* buffer, size_t bytes, uint32_t tag) {
  Transfer& t = storage_.emplace_back();
  t.isSend = isSend;
  t.buffer = buffer;
  t.bytes = bytes;
  t.tag = tag;
  if (std::find(connections_.begin(), connections_.end(), c) == connections_.end())
    connections_.push_back(c);
  transfers_.push_back(&t);
  return c->post(t);
}

Status Traffic::send(Connection* c, void* buffer, size_t bytes, uint32_t tag) {
  return post(c, true, buffer, bytes, tag);
}

Status Traffic::receive(Connection* c, void* buffer, size_t bytes, uint32_t tag) {
  return post(c, false, buffer, bytes, tag);
}

Status Traffic::sendPattern(Connection* c, int from, int to, int index, size_t bytes,
                            uint32_t tag) {
  return send(c, buffers_.emplace_back(pattern(from, to, index, bytes)).data(), bytes, tag);
}

Status Traffic::receivePattern(Connection* c, int from, int to, int index, size_t bytes,
                               uint32_t tag) {
  std::vector<uint8_t>& data = buffers_.emplace_back(bytes, 0xee);
  patternReceives_.push_back({&data, from, to, index});
  return receive(c, data.data(), bytes, tag);
}

void Traffic::expectPatterns() const {
  for (const PatternReceive& r : patternReceives_) {
    EXPECT_TRUE(*r.data == pattern(r.from, r.to, r.index, r.data->size()))
        << "rank " << r.to << " message " << r.index << " (" << r.data->size()
        << " bytes) from rank " << r.from;
  }
}

uint16_t closedLoopbackPort() {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io,
                                   asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

}  // namespace hcl::test
