// Sets MXCSR's flush-to-zero and denormals-are-zero bits for its lifetime,
// as a caller that runs with them (PyTorch's set_flush_denormal) would.
#pragma once

#include <xmmintrin.h>

class FlushDenormals {
 public:
  explicit FlushDenormals(bool on) : saved_(_mm_getcsr()) {
    if (on) _mm_setcsr(saved_ | 0x8040);
  }
  ~FlushDenormals() { _mm_setcsr(saved_); }
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned saved_;
};
