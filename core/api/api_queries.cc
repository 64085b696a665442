// C entry points: errors, queries, reduction operators, registration.
#include <fmt/format.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/validate.h"

using namespace hcl;

namespace {

// Queries work on a communicator even after it failed; one whose init is
// still pending or failed has nothing to report yet. The handle is read
// while it cannot be freed: a watchdog may poll it while another thread
// aborts it.
Status liveComm(hclComm_t comm, std::shared_ptr<Communicator>& out) {
  if (!comm) return invalidArgument("comm is NULL");
  Status s;
  const bool live = withLiveHandle(comm, [&] {
    if (comm->initPending.load(std::memory_order_acquire) || !comm->impl) {
      std::shared_ptr<Communicator> none;
      s = checkLiveComm(comm, none);  // says why there is nothing yet
    } else {
      out = comm->impl;
    }
  });
  if (!live) {
    return invalidArgument(fmt::format("comm {} is not a valid communicator (destroyed or never created)",
                                       static_cast<const void*>(comm)));
  }
  return s;
}

// Where a communicator's init stands: in progress, or its error.
bool initNotDone(hclComm_t comm, hclResult_t* asyncError) {
  bool notDone = false;
  withLiveHandle(comm, [&] {
    if (comm->initPending.load(std::memory_order_acquire)) {
      *asyncError = hclInProgress;
      notDone = true;
    } else if (!comm->impl) {
      *asyncError = comm->initStatus.code();
      notDone = true;
    }
  });
  return notDone;
}

}  // namespace

extern "C" {

const char* hclGetErrorString(hclResult_t result) { return resultString(result); }

const char* hclGetLastError(hclComm_t comm) { return lastErrorText(comm); }

void hclResetDebugInit(void) { log::reset(); }

hclResult_t hclCommGetAsyncError(hclComm_t comm, hclResult_t* asyncError) {
  if (asyncError && initNotDone(comm, asyncError)) return hclSuccess;  // as NCCL: the init's state
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && !asyncError) s = invalidArgument("asyncError is NULL");
  if (!s.ok()) return report(s.withContext("hclCommGetAsyncError"));
  *asyncError = c->failure().code();
  return hclSuccess;
}

hclResult_t hclCommCount(const hclComm_t comm, int* count) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && !count) s = invalidArgument("count is NULL");
  if (!s.ok()) return report(s.withContext("hclCommCount"));
  *count = c->nranks();
  return hclSuccess;
}

hclResult_t hclCommCuDevice(const hclComm_t comm, int* device) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && !device) s = invalidArgument("device is NULL");
  if (!s.ok()) return report(s.withContext("hclCommCuDevice"));
  *device = c->device().index();  // -1 on the CPU device
  return hclSuccess;
}

hclResult_t hclCommUserRank(const hclComm_t comm, int* rank) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && !rank) s = invalidArgument("rank is NULL");
  if (!s.ok()) return report(s.withContext("hclCommUserRank"));
  *rank = c->rank();
  return hclSuccess;
}

hclResult_t hclRedOpCreatePreMulSum(hclRedOp_t* op, void* scalar, hclDataType_t datatype,
                                    hclScalarResidence_t residence, hclComm_t comm) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && c->finalized()) s = refusal::finalized();
  if (s.ok() && !op) s = invalidArgument("op is NULL");
  if (s.ok() && !scalar) s = invalidArgument("scalar is NULL");
  if (s.ok()) s = checkDataType(datatype);
  if (s.ok() && residence != hclScalarDevice && residence != hclScalarHostImmediate) {
    s = invalidArgument(fmt::format("residence {} is not a valid hclScalarResidence_t", static_cast<int>(residence)));
  }
  if (s.ok()) s = c->redOps().create(datatype, scalar, residence, op);
  return report(s.withContext("hclRedOpCreatePreMulSum"), comm);
}

hclResult_t hclRedOpDestroy(hclRedOp_t op, hclComm_t comm) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && op >= 0 && op < hclNumOps) {
    s = invalidArgument(fmt::format("op {} is a built-in operator and cannot be destroyed", static_cast<int>(op)));
  }
  if (s.ok()) s = c->redOps().destroy(op);
  return report(s.withContext("hclRedOpDestroy"), comm);
}

hclResult_t hclCommRegister(const hclComm_t comm, void* buff, size_t size, void** handle) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && c->finalized()) s = refusal::finalized();
  if (s.ok() && !handle) s = invalidArgument("handle is NULL");
  if (s.ok() && !buff && size > 0) s = invalidArgument(fmt::format("buff is NULL with size {}", size));
  if (!s.ok()) return report(s.withContext("hclCommRegister"), comm);
  *handle = c->registrations().add({buff, size});
  return hclSuccess;
}

hclResult_t hclCommDeregister(const hclComm_t comm, void* handle) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  // As NCCL (whose registration may hand out NULL): a NULL handle is no error.
  if (s.ok() && handle && !c->registrations().remove(handle)) {
    s = invalidUsage(fmt::format("handle {} is not a registration of this communicator (deregistered already?)", handle));
  }
  return report(s.withContext("hclCommDeregister"), comm);
}

hclResult_t hclCommDescribeLinks(hclComm_t comm, char* buf, size_t size, size_t* needed) {
  std::shared_ptr<Communicator> c;
  Status s = liveComm(comm, c);
  if (s.ok() && !buf && size > 0) s = invalidArgument(fmt::format("buf is NULL with size {}", size));
  if (s.ok() && !buf && !needed) s = invalidArgument("buf and needed are both NULL: nothing to write");
  if (!s.ok()) return report(s.withContext("hclCommDescribeLinks"));
  const std::string text = c->describeLinks();
  if (needed) *needed = text.size() + 1;
  if (buf && size > 0) {
    const size_t n = std::min(size - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return hclSuccess;
}

}  // extern "C"
