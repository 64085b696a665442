// Instantiates the direct reduction loops for fp32 and fp64.
#include "collectives/reduce/direct_kernels.h"

namespace hcl::reduce_kernels {

template void reduceDirect<float>(float*, Form, const float*, Form, const float*, Form, size_t,
                                  const ReduceSpec&);
template void convertDirect<float>(float*, Form, const float*, Form, size_t, const ReduceSpec&);
template void reduceDirect<double>(double*, Form, const double*, Form, const double*, Form,
                                   size_t, const ReduceSpec&);
template void convertDirect<double>(double*, Form, const double*, Form, size_t,
                                    const ReduceSpec&);

}  // namespace hcl::reduce_kernels
