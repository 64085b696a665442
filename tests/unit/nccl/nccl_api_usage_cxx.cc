// nccl_api_usage.c compiled as C++ against HCL's nccl.h.
#include "nccl_api_usage.c"
