#include "plugins/nccl/error_text.h"

#include <algorithm>
#include <iterator>

#include "core/api_wording.h"
#include "core/errors.h"
#include "core/log.h"
#include "plugins/nccl/abi.h"

namespace hcl::nccl {
namespace {

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

constexpr std::string_view kApiNames[] = {
#include "hcl_api_names.inc"
};

bool isApiName(std::string_view word) {
  return std::find(std::begin(kApiNames), std::end(kApiNames), word) != std::end(kApiNames);
}

}  // namespace

std::string ncclWording(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  size_t i = 0;
  while (i < text.size()) {
    if (!isIdentChar(text[i])) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && isIdentChar(text[end])) ++end;
    const std::string_view word = text.substr(i, end - i);
    if (isApiName(word)) {
      out += word.starts_with("HCL_") ? "NCCL_" : "nccl";
      out += word.substr(word.starts_with("HCL_") ? 4 : 3);
    } else {
      out += word;
    }
    i = end;
  }
  return out;
}

const char* resultString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the HCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

ncclResult_t report(const Status& s, ncclComm_t comm) { return toNccl(hcl::report(s, toHcl(comm))); }

ncclResult_t notSupported(const char* call, const std::string& what, ncclComm_t comm) {
  return report(invalidUsage(std::string(call) + ": " + what + " not supported by this version of HCL"), comm);
}

}  // namespace hcl::nccl

namespace hcl {

// Replaces the core's weak definition: log lines name the NCCL API.
std::string apiWording(std::string_view text) { return nccl::ncclWording(text); }

}  // namespace hcl
