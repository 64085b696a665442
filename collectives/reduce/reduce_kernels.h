// Per-family entry points behind reduce()/convert(). "Direct" types (integers,
// fp32, fp64) accumulate in themselves, so both forms share one layout; the
// narrow floats (fp16, bf16, fp8) accumulate in fp32.
#pragma once

#include <cstddef>

#include "collectives/reduce/reduce.h"

namespace hcl::reduce_kernels {

template <class T>
void reduceDirect(T* dst, Form dstForm, const T* a, Form aForm, const T* b, Form bForm,
                  size_t count, const ReduceSpec& spec);

template <class T>
void convertDirect(T* dst, Form dstForm, const T* src, Form srcForm, size_t count,
                   const ReduceSpec& spec);

void reduceNarrow(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
                  size_t count, const ReduceSpec& spec);

void convertNarrow(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                   const ReduceSpec& spec);

}  // namespace hcl::reduce_kernels
