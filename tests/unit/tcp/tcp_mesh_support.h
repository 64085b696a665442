// Test harness: "ranks" as threads of one process, each owning a TCP
// Transport, set up through the real listen/connect phases on loopback.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <cstdint>
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

// Polls `connections` until every transfer is done or one connection fails.
Status waitAll(const std::vector<Connection*>& connections,
               const std::vector<Transfer*>& transfers);

// Deterministic payload of message `index` from `from` to `to`.
std::vector<uint8_t> pattern(int from, int to, int index, size_t bytes);

// A loopback port with nothing listening on it.
uint16_t closedLoopbackPort();

}  // namespace hcl::test
