#include "plugins/nccl/error_text.h"

#include "core/api_wording.h"
#include "core/errors.h"
#include "core/log.h"
#include "plugins/nccl/abi.h"

namespace hcl::nccl {
namespace {

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string ncclWording(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const bool wordStart = i == 0 || !isIdentChar(text[i - 1]);
    if (wordStart && text.substr(i, 3) == "hcl" && i + 3 < text.size() && text[i + 3] >= 'A' &&
        text[i + 3] <= 'Z') {
      out += "nccl";
      i += 2;
      continue;
    }
    out += text[i];
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
