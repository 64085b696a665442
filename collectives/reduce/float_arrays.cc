#include "collectives/reduce/float_arrays.h"

#include <bit>

#include "collectives/reduce/float_formats.h"

namespace hcl {

void halfToFloatSoftware(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = halfToFloat(src[i]);
}

void floatToHalfSoftware(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = floatToHalf(src[i]);
}

namespace {

void bf16ToFloatArray(const uint16_t* __restrict src, float* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(bf16ToFloatBits(src[i]));
}

void floatToBf16Array(const float* __restrict src, uint16_t* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = floatToBf16(src[i]);
}

void fp8ToFloatArray(const std::array<uint32_t, 256>& table, const uint8_t* __restrict src,
                     float* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(table[src[i]]);
}

template <uint8_t (*kRound)(float)>
void floatToFp8Array(const float* __restrict src, uint8_t* __restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = kRound(src[i]);
}

}  // namespace

void widenToFloat(hclDataType_t t, const void* src, float* dst, size_t n) {
  switch (t) {
    case hclFloat16:
      if (cpuHasF16C())
        halfToFloatF16C(static_cast<const uint16_t*>(src), dst, n);
      else
        halfToFloatSoftware(static_cast<const uint16_t*>(src), dst, n);
      return;
    case hclBfloat16: bf16ToFloatArray(static_cast<const uint16_t*>(src), dst, n); return;
    case hclFloat8e4m3:
      fp8ToFloatArray(kE4m3ToFloatBits, static_cast<const uint8_t*>(src), dst, n);
      return;
    case hclFloat8e5m2:
      fp8ToFloatArray(kE5m2ToFloatBits, static_cast<const uint8_t*>(src), dst, n);
      return;
    default: return;
  }
}

void narrowFromFloat(hclDataType_t t, const float* src, void* dst, size_t n) {
  switch (t) {
    case hclFloat16:
      if (cpuHasF16C())
        floatToHalfF16C(src, static_cast<uint16_t*>(dst), n);
      else
        floatToHalfSoftware(src, static_cast<uint16_t*>(dst), n);
      return;
    case hclBfloat16: floatToBf16Array(src, static_cast<uint16_t*>(dst), n); return;
    case hclFloat8e4m3: floatToFp8Array<floatToE4m3>(src, static_cast<uint8_t*>(dst), n); return;
    case hclFloat8e5m2: floatToFp8Array<floatToE5m2>(src, static_cast<uint8_t*>(dst), n); return;
    default: return;
  }
}

}  // namespace hcl
