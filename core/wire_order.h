// Little-endian integer packing for HCL's wire formats (TCP frames and
// hellos, verbs setup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hcl {

template <typename T>
requires std::is_unsigned_v<T>
void storeLittleEndian(uint8_t* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

template <typename T>
requires std::is_unsigned_v<T> T loadLittleEndian(const uint8_t* in) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(in[i]) << (8 * i);
  return value;
}

}  // namespace hcl
