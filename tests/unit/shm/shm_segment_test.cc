// Where a segment's slots lie, in this process only.
#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "shm_test_fixture.h"

namespace hcl::test {
namespace {

using ::testing::HasSubstr;

uintptr_t addressOf(const uint8_t* p) { return reinterpret_cast<uintptr_t>(p); }

// An odd number of packed slots leaves half a cache line at the end of each
// FIFO: the other FIFO, written by the other side, must not share that line.
TEST_F(ShmTest, EachFifoOfAnOddPackedLaneStartsOnItsOwnCacheLine) {
  shm::Geometry geometry;
  ASSERT_TRUE(shm::geometryFromParams(geometry).ok());
  geometry.lane[shm::kPackedLane].slots = 3;
  const std::string name = shm::segmentName(id_.secret, id_.commTag, 0, 1);
  std::shared_ptr<shm::Segment> segment;
  ASSERT_TRUE(shm::Segment::create(name, geometry, 0, 1, segment).ok());
  ::shm_unlink(name.c_str());

  const uintptr_t lastOfFirst = addressOf(segment->slot(0, shm::kPackedLane, 2));
  const uintptr_t firstOfSecond = addressOf(segment->slot(1, shm::kPackedLane, 0));
  EXPECT_EQ(addressOf(segment->slot(0, shm::kPackedLane, 1)) - addressOf(segment->slot(0, shm::kPackedLane, 0)),
            shm::kPackedSlotBytes);
  EXPECT_EQ(firstOfSecond % shm::kCacheLine, 0u);
  EXPECT_GE(firstOfSecond, lastOfFirst + shm::kCacheLine);
  // The next lane starts on a line of its own too, after both FIFOs.
  const uintptr_t small = addressOf(segment->slot(0, shm::kSmallLane, 0));
  EXPECT_EQ(small % shm::kCacheLine, 0u);
  EXPECT_GE(small, addressOf(segment->slot(1, shm::kPackedLane, 2)) + shm::kPackedSlotBytes);
}

TEST_F(ShmTest, PackedSlotsHoldSixteenBytesTwoPerCacheLine) {
  shm::Geometry geometry;
  ASSERT_TRUE(shm::geometryFromParams(geometry).ok());
  EXPECT_EQ(geometry.lane[shm::kPackedLane].slotBytes, 16u);
  EXPECT_EQ(shm::describeLanes(geometry), "512x16 B, 2048x256 B, 128x4 KiB, 8x256 KiB");
}

// A segment larger than /dev/shm fails at creation, with the settings that
// shrink it named, and leaves no file behind.
TEST_F(ShmTest, ASegmentLargerThanDevShmFailsNamingTheSettingsThatShrinkIt) {
  struct statvfs fs {};
  if (::statvfs("/dev/shm", &fs) != 0 || fs.f_blocks == 0) GTEST_SKIP() << "/dev/shm has no size limit";
  shm::Geometry geometry;
  ASSERT_TRUE(shm::geometryFromParams(geometry).ok());
  geometry.lane[shm::kBulkLane] = {4096, uint64_t{1} << 30};  // 4 TiB per FIFO
  const std::string name = shm::segmentName(id_.secret, id_.commTag, 0, 1);
  std::shared_ptr<shm::Segment> segment;
  const Status s = shm::Segment::create(name, geometry, 0, 1, segment);
  EXPECT_EQ(s.code(), hclSystemError);
  EXPECT_THAT(s.message(), HasSubstr("more than /dev/shm holds"));
  for (const char* setting : {"HCL_SHM_SLOTS", "HCL_SHM_MEDIUM_SLOTS", "HCL_SHM_SMALL_SLOTS", "HCL_SHM_DISABLE=1"}) {
    EXPECT_THAT(s.message(), HasSubstr(setting));
  }
  EXPECT_EQ(segment, nullptr);
  EXPECT_TRUE(segmentsInDevShm(id_).empty());
}

// Bytes of /dev/shm a segment's file holds.
uint64_t bytesHeld(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return ~uint64_t{0};
  struct stat st {};
  const int rc = ::fstat(fd, &st);
  ::close(fd);
  return rc == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : ~uint64_t{0};
}

// A pair's segment takes its header's page at creation, and then only what
// is reserved: the first bytes of each slot of one lane of one FIFO.
TEST_F(ShmTest, ASegmentHoldsItsHeaderAndThenWhatIsReserved) {
  shm::Geometry geometry;
  ASSERT_TRUE(shm::geometryFromParams(geometry).ok());
  const std::string name = shm::segmentName(id_.secret, id_.commTag, 0, 1);
  std::shared_ptr<shm::Segment> segment;
  ASSERT_TRUE(shm::Segment::create(name, geometry, 0, 1, segment).ok());
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (page != 4096) GTEST_SKIP() << "the page counts below assume 4 KiB pages, not " << page;
  const uint64_t atCreation = bytesHeld(name);
  EXPECT_LE(atCreation, 4 * page) << "of " << segment->header().totalBytes << " bytes";
  for (int fifo = 0; fifo < 2; ++fifo) {
    for (int lane = 0; lane < shm::kLanes; ++lane) EXPECT_FALSE(segment->headersReserved(fifo, shm::Lane(lane)));
  }

  // The bulk lane's 8 slots are 256 KiB apart: a header line each is 8 pages.
  ASSERT_TRUE(segment->reserve(0, shm::kBulkLane, shm::kSlotHeaderBytes).ok());
  EXPECT_EQ(bytesHeld(name), atCreation + 8 * page);
  EXPECT_TRUE(segment->headersReserved(0, shm::kBulkLane));
  EXPECT_FALSE(segment->headersReserved(1, shm::kBulkLane));
  // Less than what is there already takes nothing more.
  ASSERT_TRUE(segment->reserve(0, shm::kBulkLane, 10).ok());
  EXPECT_EQ(bytesHeld(name), atCreation + 8 * page);

  // 20 KiB of payload after each header: 6 pages per slot.
  ASSERT_TRUE(segment->reserve(0, shm::kBulkLane, shm::kSlotHeaderBytes + 20 * 1024).ok());
  EXPECT_EQ(bytesHeld(name), atCreation + 8 * 6 * page);

  // The small lane's slots lie back to back: the whole FIFO, once.
  const uint64_t smallFifo = uint64_t{geometry.lane[shm::kSmallLane].slots} *
                             (shm::kSlotHeaderBytes + geometry.lane[shm::kSmallLane].slotBytes);
  ASSERT_TRUE(segment->reserve(1, shm::kSmallLane, shm::kSlotHeaderBytes).ok());
  const uint64_t afterSmall = bytesHeld(name);
  EXPECT_GE(afterSmall, atCreation + 8 * 6 * page + smallFifo);
  EXPECT_LE(afterSmall, atCreation + 8 * 6 * page + smallFifo + 2 * page);
  EXPECT_TRUE(segment->headersReserved(1, shm::kSmallLane));
  EXPECT_FALSE(segment->headersReserved(0, shm::kSmallLane));
  ::shm_unlink(name.c_str());
}

// In a /dev/shm with no room left, reserving is an error naming /dev/shm,
// the lane, the ranks and the settings that shrink it: never a SIGBUS.
// Needs a mount namespace of its own (root).
TEST_F(ShmTest, ReservingInAFullDevShmIsAnErrorNotASigbus) {
  int pipeFds[2];
  ASSERT_EQ(::pipe(pipeFds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipeFds[0]);
    const auto report = [&](const std::string& text, int code) {
      (void)!::write(pipeFds[1], text.data(), text.size());
      ::_exit(code);
    };
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0) {
      report(std::string("no mount namespace with a small /dev/shm: ") + std::strerror(errno), 77);
    }
    shm::Geometry geometry{};
    geometry.lane[shm::kPackedLane] = {0, shm::kPackedPayloadBytes};
    geometry.lane[shm::kBulkLane] = {1, 300 * 1024};
    const std::string name = shm::segmentName(id_.secret, id_.commTag, 3, 5);
    std::shared_ptr<shm::Segment> segment;
    if (Status s = shm::Segment::create(name, geometry, 3, 5, segment); !s.ok()) report(s.message(), 1);
    if (Status s = segment->reserve(0, shm::kBulkLane, 300 * 1024); !s.ok()) report(s.message(), 2);
    // Another file takes what is left.
    const int filler = ::shm_open("/hcl-test-filler", O_CREAT | O_RDWR, 0600);
    for (off_t at = 0; ::posix_fallocate(filler, at, 4096) == 0; at += 4096) {
    }
    const Status s = segment->reserve(1, shm::kBulkLane, 300 * 1024);
    report(s.message(), s.ok() ? 3 : 0);
  }
  ::close(pipeFds[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipeFds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  ::close(pipeFds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died by signal " << WTERMSIG(status);
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << text;
  ASSERT_EQ(WEXITSTATUS(status), 0) << text;
  EXPECT_THAT(text, HasSubstr("no room in /dev/shm for the bulk lane's slots from rank 5 to rank 3"));
  for (const char* setting : {"HCL_SHM_SLOTS", "HCL_SHM_DISABLE=1"}) EXPECT_THAT(text, HasSubstr(setting));
}

}  // namespace
}  // namespace hcl::test
