// streamingCopy and nonTemporalCopy are memcpy with cache-bypassing
// stores: every size and every alignment of source and destination must
// copy exactly, and nothing past the end may be touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/streaming_copy.h"

namespace {

void expectEverySizeAndAlignmentCopiedExactly(void (*copy)(void*, const void*, size_t)) {
  constexpr size_t kGuard = 64;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{127}, size_t{16384}, size_t{20001},
                       size_t{65535}, size_t{65536}, size_t{65537}, size_t{100003}, size_t{1} << 20}) {
    for (size_t srcOff : {0, 1, 13}) {
      for (size_t dstOff : {0, 3, 16, 31}) {
        std::vector<uint8_t> src(bytes + srcOff), dst(bytes + dstOff + kGuard, 0xAB);
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
        copy(dst.data() + dstOff, src.data() + srcOff, bytes);
        for (size_t i = 0; i < dstOff; ++i) ASSERT_EQ(dst[i], 0xAB) << "before, " << bytes << " bytes";
        for (size_t i = 0; i < bytes; ++i) {
          ASSERT_EQ(dst[dstOff + i], src[srcOff + i]) << "byte " << i << " of " << bytes;
        }
        for (size_t i = 0; i < kGuard; ++i) ASSERT_EQ(dst[dstOff + bytes + i], 0xAB) << "after, " << bytes << " bytes";
      }
    }
  }
}

TEST(StreamingCopy, CopiesEverySizeAndAlignmentExactly) {
  expectEverySizeAndAlignmentCopiedExactly(hcl::streamingCopy);
}

// Below 64 KiB too, where streamingCopy goes through the cache.
TEST(StreamingCopy, NonTemporalCopiesEverySizeAndAlignmentExactly) {
  expectEverySizeAndAlignmentCopiedExactly(hcl::nonTemporalCopy);
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

// Every way of storing the two results, at every alignment of either
// destination (16-byte and 64-byte stores, and the element loops around
// them).
TEST(StreamingSums, WriteTheSumToBothDestinationsAtAnyAlignment) {
  enum class Kernel { Cached, PeerStreamed, BothStreamed, KeptAndStreamed, KeptAndCached };
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{17}, size_t{1001}, size_t{1} << 16}) {
    for (size_t off1 : {0, 1, 3, 4, 16}) {
      for (size_t off2 : {0, 2, 4, 16}) {
        for (Kernel kernel : {Kernel::Cached, Kernel::PeerStreamed, Kernel::BothStreamed, Kernel::KeptAndStreamed,
                              Kernel::KeptAndCached}) {
          Floats d1(count, off1), d2(count, off2);
          std::vector<float> a(count), b(count);
          for (size_t i = 0; i < count; ++i) {
            a[i] = inputA(i);
            b[i] = inputB(i);
          }
          switch (kernel) {
            case Kernel::Cached:
              hcl::sumToOwnAndPeer(d1.at, d2.at, a.data(), b.data(), count, hcl::SumStores::Cached);
              break;
            case Kernel::PeerStreamed:
              hcl::sumToOwnAndPeer(d1.at, d2.at, a.data(), b.data(), count, hcl::SumStores::PeerStreamed);
              break;
            case Kernel::BothStreamed:
              hcl::sumToOwnAndPeer(d1.at, d2.at, a.data(), b.data(), count, hcl::SumStores::BothStreamed);
              break;
            case Kernel::KeptAndStreamed:
              hcl::sumToKeptAndOut(d1.at, d2.at, a.data(), b.data(), count, true);
              break;
            case Kernel::KeptAndCached:
              hcl::sumToKeptAndOut(d1.at, d2.at, a.data(), b.data(), count, false);
              break;
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

// In place, the result overwrites the input it is summed from: an in-place
// allreduce's own output, and the window all-reduce storing the result
// over its own input.
TEST(StreamingSums, ResultMayOverwriteItsInput) {
  using Sum = std::function<void(float* other, float* inout, const float* a, size_t count)>;
  const std::vector<Sum> sums = {
      [](float* o, float* io, const float* a, size_t n) { hcl::sumToOwnAndPeer(io, o, a, io, n, hcl::SumStores::Cached); },
      [](float* o, float* io, const float* a, size_t n) {
        hcl::sumToOwnAndPeer(io, o, a, io, n, hcl::SumStores::PeerStreamed);
      },
      [](float* o, float* io, const float* a, size_t n) {
        hcl::sumToOwnAndPeer(io, o, a, io, n, hcl::SumStores::BothStreamed);
      },
      [](float* o, float* io, const float* a, size_t n) { hcl::sumToKeptAndOut(o, io, a, io, n, true); },
      [](float* o, float* io, const float* a, size_t n) { hcl::sumToKeptAndOut(o, io, a, io, n, false); },
  };
  for (size_t k = 0; k < sums.size(); ++k) {
    for (size_t count : {size_t{5}, size_t{1000}, size_t{1} << 15}) {
      for (size_t off : {0, 1, 16}) {
        Floats other(count, 0), inout(count, off);
        std::vector<float> a(count);
        for (size_t i = 0; i < count; ++i) {
          a[i] = inputA(i);
          inout.at[i] = inputB(i);
        }
        sums[k](other.at, inout.at, a.data(), count);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(inout.at[i], inputA(i) + inputB(i)) << "kernel " << k << ", " << i;
          ASSERT_EQ(other.at[i], inputA(i) + inputB(i)) << "kernel " << k << ", " << i;
        }
      }
    }
  }
}

// Results that the next call would still find in cache stay there; where
// every rank's outputs together leave the cache anyway, both bypass it.
// Where that turns was measured per CPU family.
TEST(StreamingSums, StoresFollowTheCallSize) {
  using hcl::CpuFamily;
  using hcl::SumStores;
  constexpr size_t MiB = size_t{1} << 20;
  struct Case {
    CpuFamily family;
    size_t bytes;
    int nranks;
    SumStores want;
    bool sharedCpus = false;
  };
  const Case cases[] = {
      {CpuFamily::Other, 4096, 2, SumStores::Cached},
      {CpuFamily::Other, 1 * MiB, 2, SumStores::Cached},
      {CpuFamily::Other, 2 * MiB, 2, SumStores::BothStreamed},
      {CpuFamily::Other, 4 * MiB, 2, SumStores::PeerStreamed},
      {CpuFamily::Other, 32 * MiB, 2, SumStores::PeerStreamed},
      {CpuFamily::Other, 64 * MiB, 2, SumStores::BothStreamed},
      {CpuFamily::Other, 32 * MiB, 4, SumStores::BothStreamed},
      {CpuFamily::Other, 1024 * MiB, 1, SumStores::BothStreamed},
      // AMD EPYC: cached up to 4 MiB, the peer's streamed at 8 MiB, both
      // once the call's buffers on the host reach the 32 MiB L3.
      {CpuFamily::Amd, 4096, 2, SumStores::Cached},
      {CpuFamily::Amd, 2 * MiB, 2, SumStores::Cached},
      {CpuFamily::Amd, 4 * MiB, 2, SumStores::Cached},
      {CpuFamily::Amd, 8 * MiB, 2, SumStores::PeerStreamed},
      {CpuFamily::Amd, 16 * MiB, 2, SumStores::BothStreamed},
      {CpuFamily::Amd, 8 * MiB, 4, SumStores::BothStreamed},
      {CpuFamily::Amd, 256 * MiB, 2, SumStores::BothStreamed},
      // Where ranks share CPUs (and their caches), from 8 MiB on the host.
      {CpuFamily::Amd, 1 * MiB, 4, SumStores::Cached, true},
      {CpuFamily::Amd, 2 * MiB, 4, SumStores::BothStreamed, true},
      {CpuFamily::Amd, 4 * MiB, 2, SumStores::BothStreamed, true},
      {CpuFamily::Other, 2 * MiB, 4, SumStores::BothStreamed, true},
      {CpuFamily::Other, 1 * MiB, 4, SumStores::Cached, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(hcl::sumStoresFor(c.bytes, c.nranks, c.family, c.sharedCpus), c.want)
        << hcl::toString(c.family) << ", " << c.bytes << " bytes, " << c.nranks << " ranks"
        << (c.sharedCpus ? ", shared CPUs" : "");
  }
}

}  // namespace
