// Instantiates the direct reduction loops for the integer types.
#include "collectives/reduce/direct_kernels.h"

namespace hcl::reduce_kernels {

#define HCL_INSTANTIATE_DIRECT(T)                                                            \
  template void reduceDirect<T>(T*, Form, const T*, Form, const T*, Form, size_t,            \
                                const ReduceSpec&);                                          \
  template void convertDirect<T>(T*, Form, const T*, Form, size_t, const ReduceSpec&);

HCL_INSTANTIATE_DIRECT(int8_t)
HCL_INSTANTIATE_DIRECT(uint8_t)
HCL_INSTANTIATE_DIRECT(int32_t)
HCL_INSTANTIATE_DIRECT(uint32_t)
HCL_INSTANTIATE_DIRECT(int64_t)
HCL_INSTANTIATE_DIRECT(uint64_t)

#undef HCL_INSTANTIATE_DIRECT

}  // namespace hcl::reduce_kernels
