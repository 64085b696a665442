#include "core/errors.h"

#include <atomic>
#include <cstdint>
#include <string>

#include "core/handles.h"
#include "core/log.h"

namespace hcl {
namespace {
thread_local std::string tlsLastError;
thread_local uint64_t tlsLastErrorSerial = 0;
thread_local std::string tlsReturned;

// Orders errors across threads, so that hclGetLastError(comm) gives the most
// recent of the thread's own and the communicator's (which another thread,
// such as a nonblocking init's, may have recorded).
uint64_t nextErrorSerial() {
  static std::atomic<uint64_t> serial{0};
  return serial.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

hclResult_t report(const Status& s, hclComm* comm) {
  if (s.ok()) return hclSuccess;
  const uint64_t serial = nextErrorSerial();
  tlsLastError = s.message();
  tlsLastErrorSerial = serial;
  if (comm) {
    withLiveHandle(comm, [&] {
      std::lock_guard lock(comm->lastErrorMutex);
      if (serial < comm->lastErrorSerial) return;  // another thread's newer error came first
      comm->lastError = s.message();
      comm->lastErrorSerial = serial;
    });
  }
  // As NCCL, whose error strings send the reader to NCCL_DEBUG=WARN, argument
  // and usage errors are warnings too.
  log::warn(log::Call, "{}", s.message());
  return s.code();
}

const char* lastErrorText(hclComm* comm) {
  tlsReturned = tlsLastError;
  if (comm) {
    withLiveHandle(comm, [&] {
      std::lock_guard lock(comm->lastErrorMutex);
      if (comm->lastErrorSerial > tlsLastErrorSerial) tlsReturned = comm->lastError;
    });
  }
  return tlsReturned.c_str();
}

const char* resultString(hclResult_t r) {
  switch (r) {
    case hclSuccess: return "no error";
    case hclUnhandledCudaError: return "unhandled cuda error (run with HCL_DEBUG=INFO for details)";
    case hclSystemError: return "unhandled system error (run with HCL_DEBUG=INFO for details)";
    case hclInternalError: return "internal error - please report this issue to the HCL developers";
    case hclInvalidArgument: return "invalid argument (run with HCL_DEBUG=WARN for details)";
    case hclInvalidUsage: return "invalid usage (run with HCL_DEBUG=WARN for details)";
    case hclRemoteError: return "remote process exited or there was a network error";
    case hclInProgress: return "HCL operation in progress";
    default: return "unknown result code";
  }
}

}  // namespace hcl
