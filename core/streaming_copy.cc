#include "core/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace hcl {

void streamingCopy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  // Small copies stay in cache where the next reader wants them.
  constexpr size_t kStreamFrom = 64 * 1024;
  if (bytes < kStreamFrom) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t head = (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

void streamingSumToBoth(float* dst1, float* dst2, const float* a, const float* b, size_t count) {
  size_t i = 0;
#if defined(__x86_64__)
  const auto aligned = [](const float* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  for (; i < count && !aligned(dst1 + i); ++i) dst1[i] = dst2[i] = a[i] + b[i];
  if (aligned(dst2 + i)) {
    for (; i + 8 <= count; i += 8) {
      const __m128 x = _mm_add_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
      const __m128 y = _mm_add_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
      _mm_stream_ps(dst1 + i, x);
      _mm_stream_ps(dst1 + i + 4, y);
      _mm_stream_ps(dst2 + i, x);
      _mm_stream_ps(dst2 + i + 4, y);
    }
  }
#endif
  for (; i < count; ++i) dst1[i] = dst2[i] = a[i] + b[i];
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace hcl
