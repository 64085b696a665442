// One-sided access to a peer's memory over the shm transport (readPeer and
// writePeer, process_vm_readv/writev; mapPeer of memfd allocations), between
// forked processes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>

#include "shm_test_fixture.h"

namespace hcl::test {
namespace {

using namespace std::chrono_literals;

constexpr size_t kBytes = (2u << 20) + 5;

// Swaps one 8-byte value with the peer through ordinary messages.
Status swapWord(RankSetup& setup, int peer, uint64_t mine, uint64_t* theirs) {
  Transfer send, recv;
  send.isSend = true;
  send.buffer = &mine;
  send.bytes = sizeof mine;
  recv.isSend = false;
  recv.buffer = theirs;
  recv.bytes = sizeof *theirs;
  HCL_TRY(setup.connections[peer]->post(send));
  HCL_TRY(setup.connections[peer]->post(recv));
  return driveUntilDone(setup.all, {&send, &recv});
}

// Each rank reads the peer's source buffer and writes into the peer's inbox.
int readAndWrite(int rank, const CommIdentity& id, SharedState& shared) {
  ::unsetenv("HCL_SHM_CMA_THRESHOLD");
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  const int peer = 1 - rank;
  Connection& c = *setup.connections[peer];
  CHILD_CHECK(c.peerMemoryAccess(), "no peer memory access: {}", c.describe());

  const std::vector<uint8_t> source = pattern(rank, peer, 0, kBytes);
  std::vector<uint8_t> inbox(kBytes, 0), fetched(kBytes, 0);
  uint64_t peerSource = 0, peerInbox = 0;
  CHILD_CHECK_OK(swapWord(setup, peer, reinterpret_cast<uintptr_t>(source.data()), &peerSource));
  CHILD_CHECK_OK(swapWord(setup, peer, reinterpret_cast<uintptr_t>(inbox.data()), &peerInbox));

  CHILD_CHECK_OK(c.readPeer(peerSource, fetched.data(), kBytes));
  const std::string readDiff = compareBytes(fetched, pattern(peer, rank, 0, kBytes));
  CHILD_CHECK(readDiff.empty(), "read: {}", readDiff);

  const std::vector<uint8_t> outgoing = pattern(rank, peer, 1, kBytes);
  CHILD_CHECK_OK(c.writePeer(peerInbox, outgoing.data(), kBytes));
  CHILD_CHECK(shared.barrier.wait(20s), "barrier after writes");
  const std::string writeDiff = compareBytes(inbox, pattern(peer, rank, 1, kBytes));
  CHILD_CHECK(writeDiff.empty(), "written by the peer: {}", writeDiff);

  // An address the peer never mapped is an error, not a crash.
  const Status bad = c.readPeer(8, fetched.data(), 16);
  CHILD_CHECK(!bad.ok() && bad.message().find("process_vm_readv") != std::string::npos, "bad address: '{}'",
              bad.message());
  CHILD_CHECK(shared.barrier.wait(20s), "final barrier");
  return 0;
}

// With single copy turned off there is no peer memory access.
int singleCopyOff(int rank, const CommIdentity& id, SharedState& shared) {
  ::setenv("HCL_SHM_CMA_THRESHOLD", "0", 1);
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  Connection& c = *setup.connections[1 - rank];
  CHILD_CHECK(!c.peerMemoryAccess(), "peer memory access with HCL_SHM_CMA_THRESHOLD=0");
  uint8_t byte = 0;
  const Status s = c.readPeer(reinterpret_cast<uintptr_t>(&byte), &byte, 1);
  CHILD_CHECK(!s.ok() && s.message().find("no access") != std::string::npos, "readPeer: '{}'", s.message());
  CHILD_CHECK(shared.barrier.wait(20s), "final barrier");
  return 0;
}

// Rank 0 exits; rank 1's next read of its memory fails naming it.
int peerExits(int rank, const CommIdentity& id, SharedState& shared) {
  ::unsetenv("HCL_SHM_CMA_THRESHOLD");
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  std::vector<uint8_t> buffer(4096, 1);
  uint64_t peerBuffer = 0;
  CHILD_CHECK_OK(swapWord(setup, 1 - rank, reinterpret_cast<uintptr_t>(buffer.data()), &peerBuffer));
  CHILD_CHECK(shared.barrier.wait(20s), "barrier before exit");
  if (rank == 0) std::_Exit(0);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  Status s;
  while (s.ok() && std::chrono::steady_clock::now() < deadline) {
    s = setup.connections[0]->readPeer(peerBuffer, buffer.data(), buffer.size());
    if (s.ok()) ::usleep(1000);
  }
  CHILD_CHECK(!s.ok() && s.message().find("rank 0") != std::string::npos, "after the peer exited: '{}'",
              s.message());
  return 0;
}

// Each rank shares a memfd allocation (as hclMemAlloc makes them); the peer
// maps it and its loads and stores reach the owner's pages; once the owner
// has aborted, checkMappedAccess reports that they may have hit reused
// memory. With HCL_SHM_MAP=0 nothing is mapped.
int mapsThePeersAllocation(int rank, const CommIdentity& id, SharedState& shared, bool mapOn) {
  ::unsetenv("HCL_SHM_CMA_THRESHOLD");
  RankSetup setup;
  CHILD_CHECK_OK(setUpRank(rank, 2, id, shared.barrier, setup));
  const int peer = 1 - rank;
  Connection& c = *setup.connections[peer];
  const int fd = memfd_create("hcl-test", MFD_CLOEXEC);
  CHILD_CHECK(fd >= 0 && ftruncate(fd, kBytes) == 0, "memfd");
  auto* mine = static_cast<uint8_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  CHILD_CHECK(mine != MAP_FAILED, "mmap");
  const std::vector<uint8_t> own = pattern(rank, peer, 0, kBytes);
  std::memcpy(mine, own.data(), kBytes);
  PeerBuffer theirs;
  uint64_t peerFd = 0;
  CHILD_CHECK_OK(swapWord(setup, peer, reinterpret_cast<uintptr_t>(mine), &theirs.address));
  CHILD_CHECK_OK(swapWord(setup, peer, static_cast<uint64_t>(fd), &peerFd));
  theirs.allocBase = theirs.address;
  theirs.allocSerial = 1;
  theirs.allocFd = static_cast<int64_t>(peerFd);
  auto* mapped = static_cast<uint8_t*>(c.mapPeer(theirs, theirs.address + 64, kBytes - 64));
  if (!mapOn) {
    CHILD_CHECK(mapped == nullptr, "mapped the peer's memory with HCL_SHM_MAP=0");
  } else {
    CHILD_CHECK(mapped != nullptr, "could not map the peer's allocation: {}", c.describe());
    const std::vector<uint8_t> expect = pattern(peer, rank, 0, kBytes);
    CHILD_CHECK(std::memcmp(mapped, expect.data() + 64, kBytes - 64) == 0, "mapped bytes differ from the peer's");
    CHILD_CHECK(c.mapPeer(theirs, theirs.address + kBytes - 8, 16) == nullptr, "mapped past the allocation");
    mapped[0] = static_cast<uint8_t>(0xA0 + rank);
  }
  CHILD_CHECK(shared.barrier.wait(20s), "barrier after stores");
  if (mapOn) {
    CHILD_CHECK(mine[64] == static_cast<uint8_t>(0xA0 + peer), "the peer's store did not arrive");
    CHILD_CHECK_OK(c.checkMappedAccess());
    CHILD_CHECK(shared.barrier.wait(20s), "barrier before the abort");
    if (rank == 0) c.abort();
    CHILD_CHECK(shared.barrier.wait(20s), "barrier after the abort");
    if (rank == 1) {
      const Status s = c.checkMappedAccess();
      CHILD_CHECK(!s.ok() && s.message().find("rank 0") != std::string::npos &&
                      s.message().find("aborted") != std::string::npos,
                  "after the owner aborted: '{}'", s.message());
    }
  }
  CHILD_CHECK(shared.barrier.wait(20s), "final barrier");
  munmap(mine, kBytes);
  close(fd);
  return 0;
}

class ShmPeerAccessTest : public ShmTest {
 protected:
  void run(int (*body)(int, const CommIdentity&, SharedState&)) {
    SharedState& shared = makeShared(2);
    expectAllExitedZero(runProcesses(2, [&](int rank) { return body(rank, id_, shared); }));
  }
};

TEST_F(ShmPeerAccessTest, ReadsAndWritesThePeersBuffers) { run(readAndWrite); }
TEST_F(ShmPeerAccessTest, NoAccessWithSingleCopyOff) { run(singleCopyOff); }
TEST_F(ShmPeerAccessTest, ReadFailsOnceThePeerHasExited) { run(peerExits); }
TEST_F(ShmPeerAccessTest, MapsThePeersAllocation) {
  ::unsetenv("HCL_SHM_MAP");
  run([](int rank, const CommIdentity& id, SharedState& shared) { return mapsThePeersAllocation(rank, id, shared, true); });
}
TEST_F(ShmPeerAccessTest, MapsNothingWithMappingOff) {
  ::setenv("HCL_SHM_MAP", "0", 1);
  run([](int rank, const CommIdentity& id, SharedState& shared) { return mapsThePeersAllocation(rank, id, shared, false); });
  ::unsetenv("HCL_SHM_MAP");
}

}  // namespace
}  // namespace hcl::test
