// The layout of HCL's libfabric tags, and which providers' tags hold it.
#include <gtest/gtest.h>

#include "transports/ofi/ofi_tags.h"

namespace hcl::ofi::tags {
namespace {

TEST(OfiTags, FieldsDoNotOverlap) {
  const uint64_t t = piece(5, 0xffffffffu);
  EXPECT_EQ(senderOf(t), 5);
  EXPECT_FALSE(isControl(t));
  EXPECT_EQ(t & kSequenceMask, 0xffffffffull);
  EXPECT_NE(piece(1, 0), piece(0, 0)) << "senders differ";
  const uint64_t n = abortNotice(7);
  EXPECT_TRUE(isControl(n));
  EXPECT_EQ(senderOf(n), 7);
  EXPECT_NE(n, piece(7, 0)) << "a notice is never a piece";
  EXPECT_EQ(senderOf(piece((1 << 30) - 1, 0)), (1 << 30) - 1);
}

TEST(OfiTags, TheLastPieceCarriesTheTagFlipped) {
  EXPECT_EQ(pieceData(0x12345678u, false), 0x12345678u);
  EXPECT_EQ(pieceData(0x12345678u, true), 0x92345678u);
  EXPECT_EQ(pieceData(pieceData(0xdeadbeefu, true), true), 0xdeadbeefu);
  // The kind byte, in the low bits, stays readable either way.
  EXPECT_EQ(pieceData(0x00000002u, true) & 0xff, 0x02u);
}

TEST(OfiTags, ProvidersWithFewerTagBitsTakeFewerRanks) {
  EXPECT_EQ(usableTagBits(0), 64);
  EXPECT_EQ(usableTagBits(0xaaaaaaaaaaaaaaaaull), 64);
  EXPECT_EQ(usableTagBits(0x0fffffffffffffffull), 60);  // PSM-style 60-bit tags
  EXPECT_TRUE(fits(1 << 27, 0x0fffffffffffffffull));
  EXPECT_FALSE(fits((1 << 27) + 1, 0x0fffffffffffffffull));
  EXPECT_TRUE(fits(2, 0x00000003ffffffffull)) << "34 bits: one rank bit";
  EXPECT_FALSE(fits(3, 0x00000003ffffffffull));
  EXPECT_FALSE(fits(2, 0x00000000ffffffffull)) << "32 bits hold no rank";
}

}  // namespace
}  // namespace hcl::ofi::tags
