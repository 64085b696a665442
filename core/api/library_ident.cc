// Gives the shared library an identity string ("strings libhcl.so | grep HCL").
#include "hcl.h"

#define HCL_STR2(x) #x
#define HCL_STR(x) HCL_STR2(x)

[[gnu::used]] static const char kLibraryIdent[] =
    "HCL " HCL_STR(HCL_MAJOR) "." HCL_STR(HCL_MINOR) "." HCL_STR(HCL_PATCH) " (NCCL API 2.28.9)";
