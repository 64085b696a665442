// Gives HCL's libnccl.so.2 an identity string ("strings libnccl.so.2 | grep HCL").
#include "hcl.h"
#include "nccl.h"

#define HCL_NCCL_STR2(x) #x
#define HCL_NCCL_STR(x) HCL_NCCL_STR2(x)

[[gnu::used]] static const char kLibraryIdent[] =
    "HCL " HCL_NCCL_STR(HCL_MAJOR) "." HCL_NCCL_STR(HCL_MINOR) "." HCL_NCCL_STR(HCL_PATCH) " as libnccl.so." HCL_NCCL_STR(
        NCCL_MAJOR) " (NCCL API " HCL_NCCL_STR(NCCL_MAJOR) "." HCL_NCCL_STR(NCCL_MINOR) "." HCL_NCCL_STR(NCCL_PATCH) ")";
