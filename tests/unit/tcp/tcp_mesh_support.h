// Test harness: "ranks" as threads of one process, each owning a TCP
// Transport, set up through the real listen/connect phases on loopback.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "transports/link.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"

namespace hcl::test {

// Restricts chooseInterfaces() to IPv4 loopback for every test.
class TcpTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

// What the members of one test communicator share.
struct MeshSpec {
  explicit MeshSpec(int nranks);
  TransportContext contextFor(int rank) const;

  int nranks;
  std::vector<PeerInfo> infos;  // each rank fills its own entry in listen()
  std::vector<Link> links;      // TCP, listener address 0
  std::array<uint8_t, 16> secret{};
  uint64_t commTag = 0x5eed;
  int64_t timeoutMs = 30000;
  const std::atomic<bool>* abortFlag = nullptr;
  // Sockets each rank opens to its higher-ranked peers; empty: HCL_TCP_STREAMS.
  std::vector<int> streams;
};

struct RankSide {
  std::unique_ptr<Transport> transport;
  std::vector<std::unique_ptr<Connection>> connections;
};

// Runs body(rank) on one thread per rank and joins them all.
void runRanks(int nranks, const std::function<void(int)>& body);

// listen -> barrier -> prepare/connect to every other rank -> barrier -> finish.
// Always arrives at both barriers, so one failing rank cannot hang the others.
// `beforeConnect` runs on each rank after the first barrier.
Status setUpRank(MeshSpec& mesh, int rank, std::barrier<>& barrier, RankSide& out,
                 const std::function<void()>& beforeConnect = {});

// Sets up every rank of `mesh` with setUpRank() on a thread of its own, runs
// body(rank, side, barrier) there, and then waits at `barrier` until every
// rank is done, so no connection closes under a peer still checking. A rank
// whose setup fails reports it and skips body.
using RankBody = std::function<void(int rank, RankSide& side, std::barrier<>& barrier)>;
void runMesh(MeshSpec& mesh, const RankBody& body);

// runMesh() for a two-rank mesh: body gets the rank's connection to the other
// rank (which it may abort or reset).
using PairBody =
    std::function<void(int rank, std::unique_ptr<Connection>& peer, std::barrier<>& barrier)>;
void runPair(MeshSpec& mesh, const PairBody& body);

// Polls `connections` until every transfer is done or one connection fails.
Status waitAll(const std::vector<Connection*>& connections,
               const std::vector<Transfer*>& transfers);

// Deterministic payload of message `index` from `from` to `to`.
std::vector<uint8_t> pattern(int from, int to, int index, size_t bytes);

// The transfers one rank posts, at stable addresses, and the connections
// they were posted on.
class Traffic {
 public:
  // Post a transfer of `bytes` at `buffer` on `c`.
  Status send(Connection* c, void* buffer, size_t bytes, uint32_t tag);
  Status receive(Connection* c, void* buffer, size_t bytes, uint32_t tag);
  // Post a send of pattern(from, to, index, bytes), or a receive into a
  // buffer of its own that expectPatterns() checks against that pattern.
  Status sendPattern(Connection* c, int from, int to, int index, size_t bytes, uint32_t tag);
  Status receivePattern(Connection* c, int from, int to, int index, size_t bytes, uint32_t tag);

  // waitAll() over everything posted so far.
  Status wait() const { return waitAll(connections_, transfers_); }
  // Everything posted so far, in posting order.
  const std::vector<Transfer*>& transfers() const { return transfers_; }
  // Every receivePattern() buffer holds its pattern.
  void expectPatterns() const;

 private:
  struct PatternReceive {
    const std::vector<uint8_t>* data;
    int from, to, index;
  };
  Status post(Connection* c, bool isSend, void* buffer, size_t bytes, uint32_t tag);

  std::deque<Transfer> storage_;
  std::deque<std::vector<uint8_t>> buffers_;
  std::vector<PatternReceive> patternReceives_;
  std::vector<Connection*> connections_;
  std::vector<Transfer*> transfers_;
};

// A loopback port with nothing listening on it.
uint16_t closedLoopbackPort();

}  // namespace hcl::test
