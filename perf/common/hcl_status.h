// hcl* return codes as hcl::Status values that name the failed call.
#pragma once

#include <string>

#include "core/status.h"
#include "hcl.h"

namespace hcl::perf {

inline Status hclCallStatus(hclResult_t result, const char* call) {
  const char* detail = hclGetLastError(nullptr);
  std::string message = std::string(call) + " failed: " + hclGetErrorString(result);
  if (detail && *detail) message += std::string(" (") + detail + ")";
  return {result, message};
}

}  // namespace hcl::perf

#define PERF_HCL(call)                                                                    \
  do {                                                                                    \
    const hclResult_t perfResult_ = (call);                                               \
    if (perfResult_ != hclSuccess) return ::hcl::perf::hclCallStatus(perfResult_, #call); \
  } while (0)
