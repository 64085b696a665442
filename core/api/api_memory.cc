// C entry points: memory allocation and CPU streams.

#include <fmt/format.h>

#include <sys/sysinfo.h>

#include <cerrno>
#include <cstring>

#include "core/errors.h"
#include "core/group.h"
#include "core/handles.h"
#include "core/log.h"
#include "core/no_throw.h"
#include "core/shared_allocations.h"

using namespace hcl;

namespace {

// RAM and swap together: a shared mapping reserves nothing until touched,
// so a size beyond these would map, then fail page by page (as cudaMalloc
// refuses what the GPU cannot hold, this refuses it at once). 0: unknown.
size_t machineMemoryBytes() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return 0;
  return (static_cast<size_t>(info.totalram) + info.totalswap) * info.mem_unit;
}

}  // namespace

extern "C" {

hclResult_t hclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return report(invalidArgument("hclMemAlloc: ptr is NULL"));
  if (size == 0) {  // as NCCL (cudaMalloc of 0 bytes): success, and a NULL pointer
    *ptr = nullptr;
    return hclSuccess;
  }
  if (const size_t machine = machineMemoryBytes(); machine > 0 && size > machine) {
    return report(systemError(fmt::format(
        "hclMemAlloc: cannot allocate {} bytes: more than this machine's memory and swap ({} bytes)", size, machine)));
  }
  int fd = -1;
  void* p = mapNewSharedMemory(size, &fd);
  if (!p) {
    const int err = errno;
    return report(systemError(fmt::format("hclMemAlloc: cannot allocate {} bytes: {}", size, std::strerror(err))));
  }
  // A shared mapping of a memfd, so peers on the host can map it too.
  const uint64_t serial = addSharedAllocation(p, size, fd);
  log::trace(log::Alloc, "hclMemAlloc {} bytes at {} (shareable allocation {})", size, p, serial);
  *ptr = p;
  return hclSuccess;
}

hclResult_t hclMemFree(void* ptr) {
  if (!ptr) return hclSuccess;
  if (!releaseSharedAllocation(ptr))
    return report(invalidArgument(fmt::format("hclMemFree: ptr {} was not returned by hclMemAlloc", ptr)));
  return hclSuccess;
}

hclResult_t hclStreamCreate(hclStream_t* stream) {
  if (!stream) return report(invalidArgument("hclStreamCreate: stream is NULL"));
  // A stream has a worker thread, which the system may refuse.
  std::unique_ptr<hclStream> s;
  const Status made = noThrow("hclStreamCreate", [&]() -> Status {
    s = std::make_unique<hclStream>();
    s->impl = cpuDevice().createStream();
    return {};
  });
  if (!made.ok()) return report(made);
  registerHandle(s.get());
  *stream = s.release();  // owned by the registry until hclStreamDestroy
  return hclSuccess;
}

static Status checkLiveStream(const char* call, hclStream_t stream) {
  if (!stream || !isLiveHandle(stream)) {
    return invalidArgument(fmt::format("{}: stream {} is not a stream from hclStreamCreate", call,
                                       static_cast<const void*>(stream)));
  }
  return {};
}

hclResult_t hclStreamSynchronize(hclStream_t stream) {
  Status s = checkLiveStream("hclStreamSynchronize", stream);
  if (s.ok()) s = stream->impl->synchronize();
  return report(s);
}

hclResult_t hclStreamQuery(hclStream_t stream) {
  Status s = checkLiveStream("hclStreamQuery", stream);
  if (s.ok()) {
    s = stream->impl->query();
    if (s.code() == hclInProgress) return hclInProgress;
  }
  return report(s);
}

hclResult_t hclStreamDestroy(hclStream_t stream) {
  Status s = checkLiveStream("hclStreamDestroy", stream);
  if (s.ok() && openGroupUses(stream)) {
    s = invalidUsage(fmt::format("hclStreamDestroy: stream {} has operations recorded in the open group; "
                                 "call hclGroupEnd first", static_cast<const void*>(stream)));
  }
  if (!s.ok()) return report(s);
  if (!unregisterHandle(stream)) return hclSuccess;  // another thread's destroy took it
  std::unique_ptr<hclStream> owned(stream);  // finishes queued work, then joins
  return hclSuccess;
}

}  // extern "C"
