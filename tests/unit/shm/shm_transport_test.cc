// Data movement through the shm transport between forked processes.
#include "transports/shm/shm_transport.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>

#include "shm_test_fixture.h"

namespace hcl::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
// 16 and 17 bytes: the largest message of a packed slot, and one more; 32
// and 33 likewise for a slot's header line.
const std::vector<size_t> kAllSizes = {0, 1, 7, 16, 17, 32, 33, 100 * kKiB, kMiB + 3, 16 * kMiB + 5};

struct ExchangeOptions {
  const char* cmaThreshold = nullptr;  // HCL_SHM_CMA_THRESHOLD, unset when null
  const char* slots = nullptr;
  const char* slotBytes = nullptr;
  const char* packedSlots = nullptr;
  const char* smallSlots = nullptr;
  const char* smallSlotBytes = nullptr;
  const char* mediumSlots = nullptr;
  const char* mediumSlotBytes = nullptr;
  const char* streamStores = nullptr;
  std::vector<size_t> sizes = kAllSizes;
  const char* expectDescribe = nullptr;  // substring every connection's describe() must hold
  // Each rank's published CPU mask, all on one host (empty: nothing published).
  std::vector<std::vector<uint64_t>> cpuMasks;
};

void setOrUnset(const char* name, const char* value) {
  if (value != nullptr) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

// Every rank sends every size to every other rank and receives the same, all
// posted at once; contents are checked.
int exchangeWithAllPeers(int rank, int nranks, const CommIdentity& id, SharedState& shared,
                         const ExchangeOptions& options) {
  setOrUnset("HCL_SHM_CMA_THRESHOLD", options.cmaThreshold);
  setOrUnset("HCL_SHM_SLOTS", options.slots);
  setOrUnset("HCL_SHM_SLOT_BYTES", options.slotBytes);
  setOrUnset("HCL_SHM_PACKED_SLOTS", options.packedSlots);
  setOrUnset("HCL_SHM_SMALL_SLOTS", options.smallSlots);
  setOrUnset("HCL_SHM_SMALL_SLOT_BYTES", options.smallSlotBytes);
  setOrUnset("HCL_SHM_MEDIUM_SLOTS", options.mediumSlots);
  setOrUnset("HCL_SHM_MEDIUM_SLOT_BYTES", options.mediumSlotBytes);
  setOrUnset("HCL_SHM_STREAM_STORES", options.streamStores);
  std::vector<PeerInfo> peerInfo;
  for (size_t r = 0; r < options.cpuMasks.size(); ++r) {
    PeerInfo& p = peerInfo.emplace_back();
    p.rank = static_cast<int>(r);
    p.hostId = "host";
    p.cpuMask = options.cpuMasks[r];
  }
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, nranks, id, shared.barrier, setup, 20000, peerInfo.empty() ? nullptr : &peerInfo));

  // Every creator has run finish(): no segment of this communicator is left.
  CHILD_CHECK(shared.barrier.wait(20s), "barrier after finish");
  const auto left = segmentsInDevShm(id);
  CHILD_CHECK(left.empty(), "{} segments left in /dev/shm after finish, e.g. {}", left.size(),
              left.empty() ? "" : left.front());

  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    const std::string d = setup.connections[peer]->describe();
    std::snprintf(shared.describe[rank][peer], sizeof shared.describe[rank][peer], "%s", d.c_str());
    CHILD_CHECK(d.rfind("shm, ", 0) == 0, "describe() = '{}'", d);
    if (options.expectDescribe != nullptr) {
      CHILD_CHECK(d.find(options.expectDescribe) != std::string::npos, "describe() = '{}'", d);
    }
  }

  std::deque<Transfer> transfers;
  std::vector<std::vector<uint8_t>> sendData, recvData;
  std::vector<Transfer*> all;
  struct Expected {
    int peer, index;
    size_t slot;
  };
  std::vector<Expected> expected;
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank) continue;
      const size_t bytes = options.sizes[i];
      sendData.push_back(pattern(rank, peer, static_cast<int>(i), bytes));
      Transfer& send = transfers.emplace_back();
      send.isSend = true;
      send.buffer = sendData.back().data();
      send.bytes = bytes;
      send.tag = static_cast<uint32_t>(100 + i);
      CHILD_CHECK_OK(setup.connections[peer]->post(send));
      all.push_back(&send);

      recvData.emplace_back(bytes, 0xEE);
      Transfer& recv = transfers.emplace_back();
      recv.isSend = false;
      recv.buffer = recvData.back().data();
      recv.bytes = bytes;
      recv.tag = static_cast<uint32_t>(100 + i);
      CHILD_CHECK_OK(setup.connections[peer]->post(recv));
      all.push_back(&recv);
      expected.push_back({peer, static_cast<int>(i), recvData.size() - 1});
    }
  }
  CHILD_CHECK_OK(driveUntilDone(setup.all, all));
  for (const Transfer* t : all) CHILD_CHECK(!t->failed(), "transfer of {} bytes failed", t->bytes);
  for (const Expected& e : expected) {
    const std::string diff =
        compareBytes(recvData[e.slot], pattern(e.peer, rank, e.index, options.sizes[e.index]));
    CHILD_CHECK(diff.empty(), "message {} from rank {}: {}", e.index, e.peer, diff);
  }
  // Keep every buffer alive until all ranks are done with them.
  CHILD_CHECK(shared.barrier.wait(60s), "final barrier");
  return 0;
}

class ShmTransferTest : public ShmTest {
 protected:
  void runExchange(int nranks, const ExchangeOptions& options) {
    SharedState& shared = makeShared(nranks);
    const auto statuses = runProcesses(
        nranks, [&](int rank) { return exchangeWithAllPeers(rank, nranks, id_, shared, options); });
    expectAllExitedZero(statuses);
    EXPECT_TRUE(segmentsInDevShm(id_).empty());
    for (int r = 0; r < nranks; ++r) {
      for (int p = 0; p < nranks; ++p) {
        if (p != r) std::printf("rank %d -> rank %d: %s\n", r, p, shared.describe[r][p]);
      }
    }
  }
};

TEST_F(ShmTransferTest, TwoProcessesExchangeAllSizesWithDefaultThreshold) { runExchange(2, {}); }

TEST_F(ShmTransferTest, TwoProcessesExchangeAllSizesCopyingThroughSlots) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.expectDescribe = "copy through 512x16 B, 2048x256 B, 128x4 KiB, 8x256 KiB slots";
  runExchange(2, options);
}

// Unset, the threshold depends on whether the host's ranks have cores of
// their own: a single-copy sender waits for its reader.
TEST_F(ShmTransferTest, DefaultThresholdIs16KiBWhereEveryRankHasACore) {
  ExchangeOptions options;
  options.cpuMasks = {{0b01}, {0b10}};
  options.expectDescribe = "single copy (process_vm_readv) from 16 KiB";
  runExchange(2, options);
}

TEST_F(ShmTransferTest, DefaultThresholdIs256KiBWhereRanksShareCores) {
  ExchangeOptions options;
  options.cpuMasks = {{0b01}, {0b01}};
  options.expectDescribe = "single copy (process_vm_readv) from 256 KiB";
  runExchange(2, options);
}

TEST_F(ShmTransferTest, ASetThresholdHoldsWhereRanksShareCores) {
  ExchangeOptions options;
  options.cmaThreshold = "8192";
  options.cpuMasks = {{0b01}, {0b01}};
  options.expectDescribe = "single copy (process_vm_readv) from 8 KiB";
  runExchange(2, options);
}

TEST_F(ShmTransferTest, ThreeProcessesExchangeAllSizes) { runExchange(3, {}); }

TEST_F(ShmTransferTest, FourProcessesExchangeAllSizes) { runExchange(4, {}); }

TEST_F(ShmTransferTest, FourProcessesCopyThroughSlots) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.expectDescribe = "copy through";
  runExchange(4, options);
}

// Large messages stored past the cache into the slots, in slots whose size
// is no multiple of the cache line, arrive intact.
TEST_F(ShmTransferTest, FourProcessesStoreSlotsPastTheCache) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.streamStores = "1";
  options.slotBytes = "40000";
  options.sizes.push_back(40000 * 3 + 17);
  options.expectDescribe = "copy through";
  runExchange(4, options);
}

// Two tiny slots of a size that is no multiple of the cache line, and no
// small lanes: many fragments per message and constant wrap-around.
TEST_F(ShmTransferTest, TinySlotsFragmentAndWrapAround) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.packedSlots = "0";
  options.smallSlots = "0";
  options.mediumSlots = "0";
  options.slots = "2";
  options.slotBytes = "1000";
  options.sizes = {0, 1, 999, 1000, 1001, 2000, 12345, 300 * kKiB + 1};
  options.expectDescribe = "copy through 2x1000 B slots";
  runExchange(3, options);
}

// All four lanes tiny, sizes on both sides of each lane's limit: every lane
// wraps around, and messages of one peer interleave across lanes. Three
// packed slots leave each FIFO's last one alone on its cache line.
TEST_F(ShmTransferTest, TinyLanesKeepOrderAcrossLanesAndWrapAround) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.packedSlots = "3";
  options.smallSlots = "2";
  options.smallSlotBytes = "40";
  options.mediumSlots = "3";
  options.mediumSlotBytes = "100";
  options.slots = "2";
  options.slotBytes = "1000";
  options.sizes = {0,  101, 1,    40,   5000, 16, 41, 17, 32, 100, 15, 33, 999, 7, 1000,
                   1001, 39, 12345, 99, 8,    16, 2,  4,  5,  12,  24, 31, 3,   9};
  options.expectDescribe = "copy through 3x16 B, 2x40 B, 3x100 B, 2x1000 B slots";
  runExchange(3, options);
}

// Slots with no payload still carry messages of up to 32 bytes in their header line.
TEST_F(ShmTransferTest, HeaderOnlySmallLaneCarriesInlineMessages) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.packedSlots = "0";
  options.smallSlots = "3";
  options.smallSlotBytes = "0";
  options.sizes = {0, 32, 1, 33, 31, 4096, 4097, 2, 32};
  options.expectDescribe = "copy through 3x0 B, 128x4 KiB, 8x256 KiB slots";
  runExchange(2, options);
}

// Without the small lanes every message goes through the bulk slots.
TEST_F(ShmTransferTest, SmallLanesCanBeSwitchedOff) {
  ExchangeOptions options;
  options.cmaThreshold = "0";
  options.packedSlots = "0";
  options.smallSlots = "0";
  options.mediumSlots = "0";
  options.expectDescribe = "shm, copy through 8x256 KiB slots";
  runExchange(2, options);
}

TEST_F(ShmTransferTest, LowThresholdSendsSmallMessagesBySingleCopy) {
  ExchangeOptions options;
  options.cmaThreshold = "1";
  options.sizes = {0, 1, 7, 33, 4096, kMiB + 3};
  runExchange(2, options);
}

int manySmallMessages(int rank, const CommIdentity& id, SharedState& shared) {
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  const int peer = 1 - rank;
  constexpr int kCount = 3000;
  std::deque<Transfer> transfers;
  std::vector<std::vector<uint8_t>> sendData(kCount), recvData(kCount);
  std::vector<Transfer*> all;
  for (int i = 0; i < kCount; ++i) {
    // Through every lane: small to 256 B, medium to 4 KiB, then bulk.
    const size_t bytes = static_cast<size_t>((i * 37) % 5001);
    sendData[i] = pattern(rank, peer, i, bytes);
    recvData[i].assign(bytes, 0);
    Transfer& send = transfers.emplace_back();
    send.isSend = true;
    send.buffer = sendData[i].data();
    send.bytes = bytes;
    send.tag = static_cast<uint32_t>(i);
    Transfer& recv = transfers.emplace_back();
    recv.isSend = false;
    recv.buffer = recvData[i].data();
    recv.bytes = bytes;
    recv.tag = static_cast<uint32_t>(i);
    CHILD_CHECK_OK(setup.connections[peer]->post(send));
    CHILD_CHECK_OK(setup.connections[peer]->post(recv));
    all.push_back(&send);
    all.push_back(&recv);
  }
  CHILD_CHECK_OK(driveUntilDone(setup.all, all));
  for (int i = 0; i < kCount; ++i) {
    const std::string diff = compareBytes(recvData[i], pattern(peer, rank, i, recvData[i].size()));
    CHILD_CHECK(diff.empty(), "message {}: {}", i, diff);
  }
  CHILD_CHECK(shared.barrier.wait(60s), "final barrier");
  return 0;
}

TEST_F(ShmTransferTest, ManySmallMessagesArriveInFifoOrder) {
  SharedState& shared = makeShared(2);
  expectAllExitedZero(
      runProcesses(2, [&](int rank) { return manySmallMessages(rank, id_, shared); }));
}

// Rank 0 makes itself non-dumpable (and, as root, drops to an unprivileged
// user), so rank 1 cannot process_vm_readv its memory: 0 -> 1 must fall back
// to copying through the slots, and data must still arrive intact.
constexpr int kSkipExit = 77;

int unreadablePeer(int rank, const CommIdentity& id, SharedState& shared) {
  if (::geteuid() == 0) {
    constexpr gid_t kNobodyGid = 65534;
    constexpr uid_t kNobodyUid = 65534;
    if (::setgid(kNobodyGid) != 0 || ::setuid(kNobodyUid) != 0) return kSkipExit;
  }
  // A credential change clears "dumpable"; set it explicitly on both sides.
  CHILD_CHECK(::prctl(PR_SET_DUMPABLE, rank == 0 ? 0 : 1) == 0, "prctl: {}", std::strerror(errno));
  ExchangeOptions options;
  options.sizes = {1, 100 * kKiB, kMiB + 3};
  const int rc = exchangeWithAllPeers(rank, 2, id, shared, options);
  if (rc != 0) return rc;
  const std::string d = shared.describe[0][1];
  CHILD_CHECK(d.find("copy through") != std::string::npos, "rank 0 -> 1 describe() = '{}'", d);
  return 0;
}

TEST_F(ShmTransferTest, FallsBackToCopyingWhenPeerMemoryIsUnreadable) {
  SharedState& shared = makeShared(2);
  const auto statuses =
      runProcesses(2, [&](int rank) { return unreadablePeer(rank, id_, shared); });
  if (statuses[0].exited && statuses[0].code == kSkipExit) GTEST_SKIP() << "cannot drop privileges";
  expectAllExitedZero(statuses);
  std::printf("rank 0 -> 1: %s\nrank 1 -> 0: %s\n", shared.describe[0][1], shared.describe[1][0]);
}

}  // namespace
}  // namespace hcl::test
