// Minimal little-endian binary writer/reader for bootstrap blobs.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hcl {

class WireWriter {
 public:
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void putString(std::string_view s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void putBytes(const std::vector<uint8_t>& b) {
    put<uint32_t>(static_cast<uint32_t>(b.size()));
    bytes_.insert(bytes_.end(), b.begin(), b.end());
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

class WireReader {
 public:
  WireReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  bool get(T& v) {
    if (size_ - pos_ < sizeof(T)) return fail();
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool getString(std::string& s) {
    uint32_t n = 0;
    if (!get(n) || size_ - pos_ < n) return fail();
    s.assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return true;
  }
  bool getBytes(std::vector<uint8_t>& b) {
    uint32_t n = 0;
    if (!get(n) || size_ - pos_ < n) return fail();
    b.assign(data_ + pos_, data_ + pos_ + n);
    pos_ += n;
    return true;
  }
  bool ok() const { return ok_; }
  bool atEnd() const { return pos_ == size_; }

 private:
  bool fail() {
    ok_ = false;
    return false;
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace hcl
