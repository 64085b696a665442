// PeerMappings maps a process's memfd allocations through pidfd_getfd. The
// "peer" here is this very process, which may always take its own files.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transports/shm/shm_peer_mappings.h"

namespace {

using hcl::PeerBuffer;
using hcl::shm::PeerMappings;

// One memfd allocation, as hclMemAlloc makes them.
struct Allocation {
  explicit Allocation(size_t n) : bytes(n) {
    fd = memfd_create("hcl-test", MFD_CLOEXEC);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(n)), 0);
    base = static_cast<std::byte*>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    EXPECT_NE(base, MAP_FAILED);
  }
  ~Allocation() {
    munmap(base, bytes);
    close(fd);
  }
  PeerBuffer describe(uint64_t serial, size_t offset = 0) const {
    PeerBuffer b;
    b.address = reinterpret_cast<uintptr_t>(base) + offset;
    b.allocBase = reinterpret_cast<uintptr_t>(base);
    b.allocSerial = serial;
    b.allocFd = fd;
    return b;
  }
  size_t bytes;
  int fd = -1;
  std::byte* base = nullptr;
};

bool pidfdAvailable() {
  PeerMappings probe(0, 0, getpid());
  Allocation a(4096);
  return probe.map(a.describe(1), a.describe(1).address, 8) != nullptr;
}

class PeerMappingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pidfdAvailable()) GTEST_SKIP() << "pidfd_getfd is not available here (kernel older than 5.6 or not allowed)";
  }
};

TEST_F(PeerMappingsTest, MapsTheSamePagesAtAnotherAddress) {
  Allocation a(1 << 16);
  std::memset(a.base, 0x5A, a.bytes);
  PeerMappings m(0, 1, getpid());
  const PeerBuffer b = a.describe(7, 4096);
  auto* p = static_cast<std::byte*>(m.map(b, b.address + 100, 1000));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, a.base + 4096 + 100);
  EXPECT_EQ(p[0], std::byte{0x5A});
  p[1] = std::byte{0x11};  // stores reach the owner's pages
  EXPECT_EQ(a.base[4096 + 101], std::byte{0x11});
  a.base[4096 + 102] = std::byte{0x22};  // and the owner's stores are seen
  EXPECT_EQ(p[2], std::byte{0x22});
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.map(b, b.address, 8), p - 100);  // cached, not mapped twice
  EXPECT_EQ(m.size(), 1u);
}

TEST_F(PeerMappingsTest, RefusesWhatItCannotMap) {
  Allocation a(8192);
  PeerMappings m(0, 1, getpid());
  const PeerBuffer b = a.describe(3);
  EXPECT_EQ(m.map(b, b.address + 8000, 500), nullptr);  // runs past the allocation
  EXPECT_EQ(m.map(b, b.address - 64, 8), nullptr);       // starts before it
  EXPECT_EQ(m.map(a.describe(0), b.address, 8), nullptr);  // not shareable
  PeerBuffer badFd = a.describe(4);
  badFd.allocFd = 1 << 20;
  EXPECT_EQ(m.map(badFd, badFd.address, 8), nullptr);
  // A bad descriptor concerns one buffer only.
  EXPECT_NE(m.map(b, b.address, 8), nullptr);
}

TEST_F(PeerMappingsTest, KeepsABoundedNumberOfAllocations) {
  std::vector<std::unique_ptr<Allocation>> all;
  PeerMappings m(0, 1, getpid());
  for (uint64_t serial = 1; serial <= 40; ++serial) {
    all.push_back(std::make_unique<Allocation>(4096));
    const PeerBuffer b = all.back()->describe(serial);
    ASSERT_NE(m.map(b, b.address, 64), nullptr);
  }
  EXPECT_LE(m.size(), 16u);
  // The newest are still usable, the oldest are mapped again on demand.
  const PeerBuffer first = all.front()->describe(1);
  EXPECT_NE(m.map(first, first.address, 64), nullptr);
  // Mapping a new allocation never drops the one used just before it, even
  // when that one was the oldest.
  const PeerBuffer oldest = all[25]->describe(26);
  void* kept = m.map(oldest, oldest.address, 64);
  ASSERT_NE(kept, nullptr);
  all.push_back(std::make_unique<Allocation>(4096));
  const PeerBuffer fresh = all.back()->describe(41);
  ASSERT_NE(m.map(fresh, fresh.address, 64), nullptr);
  EXPECT_EQ(m.map(oldest, oldest.address, 64), kept);
}

}  // namespace
