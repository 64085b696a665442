// streamingCopy is memcpy with cache-bypassing stores: every size and every
// alignment of source and destination must copy exactly, and nothing past
// the end may be touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/streaming_copy.h"

namespace {

TEST(StreamingCopy, CopiesEverySizeAndAlignmentExactly) {
  constexpr size_t kGuard = 64;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{65535}, size_t{65536}, size_t{65537},
                       size_t{100003}, size_t{1} << 20}) {
    for (size_t srcOff : {0, 1, 13}) {
      for (size_t dstOff : {0, 3, 16, 31}) {
        std::vector<uint8_t> src(bytes + srcOff), dst(bytes + dstOff + kGuard, 0xAB);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
        hcl::streamingCopy(dst.data() + dstOff, src.data() + srcOff, bytes);
        for (size_t i = 0; i < dstOff; ++i) ASSERT_EQ(dst[i], 0xAB) << "before, " << bytes << " bytes";
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(dst[dstOff + i], src[srcOff + i]) << "byte " << i << " of " << bytes;
        }
        for (size_t i = 0; i < kGuard; ++i) ASSERT_EQ(dst[dstOff + bytes + i], 0xAB) << "after, " << bytes << " bytes";
      }
    }
  }
}

}  // namespace

namespace {

TEST(StreamingSumToBoth, WritesTheSumToBothDestinationsAtAnyAlignment) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1001}, size_t{1} << 16}) {
    for (size_t off1 : {0, 1, 3}) {
      for (size_t off2 : {0, 2}) {
        std::vector<float> a(count), b(count), d1(count + off1 + 4, -1.0f), d2(count + off2 + 4, -1.0f);
        for (size_t i = 0; i < count; ++i) {
          a[i] = static_cast<float>(i) * 0.5f;
          b[i] = 1.0f / static_cast<float>(i + 1);
        }
        hcl::streamingSumToBoth(d1.data() + off1, d2.data() + off2, a.data(), b.data(), count);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(d1[off1 + i], a[i] + b[i]) << i << " of " << count;
          ASSERT_EQ(d2[off2 + i], a[i] + b[i]) << i << " of " << count;
        }
        for (size_t i = 0; i < 4; ++i) {
          ASSERT_EQ(d1[off1 + count + i], -1.0f);
          ASSERT_EQ(d2[off2 + count + i], -1.0f);
        }
        if (off1 > 0) ASSERT_EQ(d1[off1 - 1], -1.0f);
        if (off2 > 0) ASSERT_EQ(d2[off2 - 1], -1.0f);
      }
    }
  }
}

}  // namespace
