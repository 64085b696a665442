/* NVIDIA's nccl.h: its layout facts for the header test, and compile-time
 * checks that they equal hcl.h's (whose layout HCL's nccl.h is checked
 * against in plugins/nccl/abi.h). */
#include <nccl.h>

#include "hcl.h"
#include "nccl_layout.h"

#ifdef HCL_NCCL_HEADER
#error "this file must be compiled against NVIDIA's nccl.h"
#endif

#define SAME_CONFIG_FIELD(field)                                                   \
  _Static_assert(offsetof(ncclConfig_t, field) == offsetof(hclConfig_t, field) &&  \
                     sizeof(((ncclConfig_t*)0)->field) == sizeof(((hclConfig_t*)0)->field), \
                 "ncclConfig_t." #field " differs from HCL's layout");
NCCL_CONFIG_FIELDS(SAME_CONFIG_FIELD)

#define SAME_SIM_FIELD(field)                                                       \
  _Static_assert(offsetof(ncclSimInfo_t, field) == offsetof(hclSimInfo_t, field) && \
                     sizeof(((ncclSimInfo_t*)0)->field) == sizeof(((hclSimInfo_t*)0)->field), \
                 "ncclSimInfo_t." #field " differs from HCL's layout");
NCCL_SIM_INFO_FIELDS(SAME_SIM_FIELD)

_Static_assert(sizeof(ncclConfig_t) == sizeof(hclConfig_t), "ncclConfig_t size");
_Static_assert(sizeof(ncclSimInfo_t) == sizeof(hclSimInfo_t), "ncclSimInfo_t size");
_Static_assert(sizeof(ncclUniqueId) == sizeof(hclUniqueId), "ncclUniqueId size");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(hclRedOp_t) && (long)ncclMaxRedOp == (long)hclMaxRedOp, "ncclRedOp_t");
_Static_assert(NCCL_VERSION_CODE == HCL_NCCL_VERSION_CODE, "NCCL version HCL matches");

const size_t hcl_test_nvidia_layout[] = NCCL_LAYOUT_VALUES;
const size_t hcl_test_nvidia_layout_count = sizeof hcl_test_nvidia_layout / sizeof hcl_test_nvidia_layout[0];
