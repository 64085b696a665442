// The argument checks' inline tests against the limits they enforce: a
// count whose bytes fit in half of size_t passes, one element more does not,
// and products that wrap around size_t are refused rather than wrapped.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/validate.h"

namespace hcl {
namespace {

constexpr size_t kLimit = SIZE_MAX / 2;

TEST(CheckCount, BytesUpToHalfOfSizeTPass) {
  EXPECT_TRUE(checkCount("count", kLimit, 1, hclInt8).ok());
  EXPECT_TRUE(checkCount("count", kLimit / 4, 1, hclFloat32).ok());
  EXPECT_TRUE(checkCount("count", kLimit / 8 / 3, 3, hclFloat64).ok());
  EXPECT_TRUE(checkCount("count", 0, 1000, hclFloat32).ok());
}

TEST(CheckCount, OneElementPastTheLimitIsRefusedWithItsNumbers) {
  EXPECT_EQ(checkCount("count", kLimit + 1, 1, hclInt8).code(), hclInvalidArgument);
  const Status s = checkCount("recvcount", kLimit / 4 + 1, 1, hclFloat32);
  EXPECT_EQ(s.code(), hclInvalidArgument);
  EXPECT_NE(s.message().find("recvcount " + std::to_string(kLimit / 4 + 1)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("4 bytes"), std::string::npos) << s.message();
  EXPECT_EQ(checkCount("count", kLimit / 8 / 3 + 1, 3, hclFloat64).code(), hclInvalidArgument);
}

TEST(CheckCount, ProductsThatWrapAroundAreRefused) {
  // 2^62 x 4 elements wrap to 0; 2^61 x 1 elements of 8 bytes wrap to 0 bytes.
  EXPECT_EQ(checkCount("count", uint64_t{1} << 62, 4, hclFloat32).code(), hclInvalidArgument);
  EXPECT_EQ(checkCount("count", uint64_t{1} << 61, 1, hclFloat64).code(), hclInvalidArgument);
  EXPECT_EQ(checkCount("count", SIZE_MAX, SIZE_MAX, hclInt8).code(), hclInvalidArgument);
}

TEST(CheckScalars, RangesAndMessages) {
  EXPECT_TRUE(checkDataType(0).ok());
  EXPECT_TRUE(checkDataType(hclNumTypes - 1).ok());
  const Status type = checkDataType(hclNumTypes);
  EXPECT_EQ(type.code(), hclInvalidArgument);
  EXPECT_NE(type.message().find("datatype " + std::to_string(hclNumTypes)), std::string::npos) << type.message();
  EXPECT_EQ(checkDataType(-1).code(), hclInvalidArgument);

  EXPECT_TRUE(checkRank("root", 0, 1).ok());
  EXPECT_TRUE(checkRank("root", 3, 4).ok());
  const Status rank = checkRank("peer", 4, 4);
  EXPECT_EQ(rank.code(), hclInvalidArgument);
  EXPECT_NE(rank.message().find("peer 4"), std::string::npos) << rank.message();
  EXPECT_EQ(checkRank("root", -1, 4).code(), hclInvalidArgument);

  EXPECT_TRUE(checkBuffer("sendbuff", nullptr, 0).ok());
  int x = 0;
  EXPECT_TRUE(checkBuffer("sendbuff", &x, 1).ok());
  const Status buffer = checkBuffer("recvbuff", nullptr, 7);
  EXPECT_EQ(buffer.code(), hclInvalidArgument);
  EXPECT_NE(buffer.message().find("recvbuff is NULL with count 7"), std::string::npos) << buffer.message();
}

TEST(CheckComm, NullAndMadeUpHandlesAreRefused) {
  Communicator* out = nullptr;
  const Status null = checkComm(static_cast<hclComm_t>(nullptr), out);
  EXPECT_EQ(null.code(), hclInvalidArgument);
  EXPECT_NE(null.message().find("comm is NULL"), std::string::npos) << null.message();
  hclComm madeUp;
  const Status stale = checkComm(&madeUp, out);
  EXPECT_EQ(stale.code(), hclInvalidArgument);
  EXPECT_NE(stale.message().find("not a valid communicator"), std::string::npos) << stale.message();
  EXPECT_EQ(out, nullptr);
}

}  // namespace
}  // namespace hcl
