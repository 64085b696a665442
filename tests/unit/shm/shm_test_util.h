// Helpers for the rank code that runs in forked children of the shm tests.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "multiprocess.h"
#include "transports/transport.h"

// In a child: report and return a non-zero exit code from the rank body.
#define CHILD_CHECK(cond, ...)                                                         \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, __LINE__, #cond, \
                   fmt::format(__VA_ARGS__).c_str());                                  \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

#define CHILD_CHECK_OK(expr)                                                         \
  do {                                                                               \
    const ::hcl::Status child_status_ = (expr);                                      \
    CHILD_CHECK(child_status_.ok(), "{} -> {} ({})", #expr, child_status_.message(), \
                static_cast<int>(child_status_.code()));                             \
  } while (0)

namespace hcl::test {

// What the ranks of one test communicator share.
struct CommIdentity {
  uint8_t secret[16] = {};
  uint64_t commTag = 0;
};
CommIdentity randomIdentity();

// "hcl-<hex of secret[0..8)>": the prefix of every segment of this identity in /dev/shm.
std::string segmentPrefix(const CommIdentity& id);
std::vector<std::string> segmentsInDevShm(const CommIdentity& id);
void removeSegments(const CommIdentity& id);

struct RankSetup {
  std::unique_ptr<Transport> transport;
  std::vector<std::unique_ptr<Connection>> connections;  // [peer]
  std::vector<Connection*> all;                          // the non-null ones
};

// All setup phases with every other rank as a peer, barrier between phases.
// `peerInfo`: what the ranks published (null: nothing, as before the exchange).
Status setUpRank(int rank, int nranks, const CommIdentity& id, ProcessBarrier& barrier,
                 RankSetup& out, int64_t timeoutMs = 20000, const std::vector<PeerInfo>* peerInfo = nullptr);

// Progresses `connections` until every transfer is done, a progress() call
// fails (its status is returned) or the deadline passes (internal error).
Status driveUntilDone(const std::vector<Connection*>& connections,
                      const std::vector<Transfer*>& transfers,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

// Deterministic contents of message `index` from `src` to `dst`.
std::vector<uint8_t> pattern(int src, int dst, int index, size_t bytes);
// Empty when equal, otherwise where the first difference is.
std::string compareBytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& expected);

}  // namespace hcl::test
