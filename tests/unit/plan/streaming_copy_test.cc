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

// `count` floats at `offset` floats past a 64-byte boundary, with guards of -1.
struct Floats {
  Floats(size_t count, size_t offset) : storage(count + offset + 32, -1.0f), count(count) {
    const auto base = reinterpret_cast<uintptr_t>(storage.data());
    at = storage.data() + ((64 - base % 64) % 64) / sizeof(float) + offset;
  }
  bool guardsIntact() const {
    for (const float* p = storage.data(); p < at; ++p)
      if (*p != -1.0f) return false;
    for (const float* p = at + count; p < storage.data() + storage.size(); ++p)
      if (*p != -1.0f) return false;
    return true;
  }
  std::vector<float> storage;
  size_t count;
  float* at;
};

float inputA(size_t i) { return static_cast<float>(i) * 0.5f; }
float inputB(size_t i) { return 1.0f / static_cast<float>(i + 1); }

// Both kernels at every alignment of either destination (16-byte and
// 64-byte stores, and the element loops around them).
TEST(StreamingSums, WriteTheSumToBothDestinationsAtAnyAlignment) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{17}, size_t{1001}, size_t{1} << 16}) {
    for (size_t off1 : {0, 1, 3, 4, 16}) {
      for (size_t off2 : {0, 2, 4, 16}) {
        for (bool streamedBoth : {true, false}) {
          Floats d1(count, off1), d2(count, off2);
          std::vector<float> a(count), b(count);
          for (size_t i = 0; i < count; ++i) {
            a[i] = inputA(i);
            b[i] = inputB(i);
          }
          if (streamedBoth) {
            hcl::streamingSumToBoth(d1.at, d2.at, a.data(), b.data(), count);
          } else {
            hcl::sumToCachedAndStreamed(d1.at, d2.at, a.data(), b.data(), count);
          }
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(d1.at[i], a[i] + b[i]) << i << " of " << count;
            ASSERT_EQ(d2.at[i], a[i] + b[i]) << i << " of " << count;
          }
          ASSERT_TRUE(d1.guardsIntact()) << count << " at " << off1;
          ASSERT_TRUE(d2.guardsIntact()) << count << " at " << off2;
        }
      }
    }
  }
}

// The window all-reduce streams the result over its own input (in place).
TEST(StreamingSums, CachedAndStreamedMayOverwriteItsInput) {
  for (size_t count : {size_t{5}, size_t{1000}, size_t{1} << 15}) {
    for (size_t off : {0, 1, 16}) {
      Floats cached(count, 0), inout(count, off);
      std::vector<float> a(count);
      for (size_t i = 0; i < count; ++i) {
        a[i] = inputA(i);
        inout.at[i] = inputB(i);
      }
      hcl::sumToCachedAndStreamed(cached.at, inout.at, a.data(), inout.at, count);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(inout.at[i], inputA(i) + inputB(i)) << i;
        ASSERT_EQ(cached.at[i], inputA(i) + inputB(i)) << i;
      }
    }
  }
}

}  // namespace
