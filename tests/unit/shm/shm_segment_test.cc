// Where a segment's slots lie, in this process only.
#include "transports/shm/shm_segment.h"

#include <gmock/gmock.h>
#include <sys/mman.h>

#include <cstdint>

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

// A segment larger than /dev/shm fails when its pages are reserved, with
// the settings that shrink it named, and leaves no file behind.
TEST_F(ShmTest, ASegmentLargerThanDevShmFailsNamingTheSettingsThatShrinkIt) {
  shm::Geometry geometry;
  ASSERT_TRUE(shm::geometryFromParams(geometry).ok());
  geometry.lane[shm::kBulkLane] = {4096, uint64_t{1} << 30};  // 4 TiB per FIFO
  const std::string name = shm::segmentName(id_.secret, id_.commTag, 0, 1);
  std::shared_ptr<shm::Segment> segment;
  const Status s = shm::Segment::create(name, geometry, 0, 1, segment);
  EXPECT_EQ(s.code(), hclSystemError);
  EXPECT_THAT(s.message(), HasSubstr("posix_fallocate"));
  for (const char* setting : {"HCL_SHM_SLOTS", "HCL_SHM_MEDIUM_SLOTS", "HCL_SHM_SMALL_SLOTS", "HCL_SHM_DISABLE=1"}) {
    EXPECT_THAT(s.message(), HasSubstr(setting));
  }
  EXPECT_EQ(segment, nullptr);
  EXPECT_TRUE(segmentsInDevShm(id_).empty());
}

}  // namespace
}  // namespace hcl::test
