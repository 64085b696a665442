// C entry points: device choice, device memory and native streams.
#include <fmt/format.h>

#include <cstring>

#include "core/device_choice.h"
#include "core/errors.h"
#include "core/handles.h"
#include "core/no_throw.h"
#include "core/validate.h"
#include "device/gated_stream.h"

using namespace hcl;

extern "C" {

hclResult_t hclSetDevice(const char* device) {
  if (!device) return report(invalidArgument("hclSetDevice: device is NULL"));
  DeviceChoice c;
  if (!parseDeviceChoice(device, c)) {
    return report(invalidArgument(fmt::format(
        "hclSetDevice: device \"{}\" is not auto, cpu, cuda[:N], hip[:N] or sim[:N]", device)));
  }
  if (!c.automatic) {
    Device* d = nullptr;
    std::string note;
    Status s = resolveDevice(c, &d, &note);
    if (!s.ok()) return report(s.withContext(fmt::format("hclSetDevice: device \"{}\"", device)));
  }
  setThreadDeviceChoice(c);
  return hclSuccess;
}

hclResult_t hclCommGetDevice(hclComm_t comm, char* buf, size_t size) {
  std::shared_ptr<Communicator> c;
  Status s = checkComm(comm, c);
  if (s.ok() && (!buf || size == 0)) s = invalidArgument(fmt::format("buf {} of size {} cannot hold the name", static_cast<void*>(buf), size));
  if (!s.ok()) return report(s.withContext("hclCommGetDevice"), comm);
  const Device& d = c->device();
  const std::string text = d.kind() == DeviceKind::Cpu ? std::string("cpu") : fmt::format("{}:{}", d.vendor(), d.index());
  const size_t n = std::min(size - 1, text.size());
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  return hclSuccess;
}

hclResult_t hclCommMemAlloc(hclComm_t comm, void** ptr, size_t size) {
  std::shared_ptr<Communicator> c;
  Status s = checkComm(comm, c);
  if (s.ok() && !ptr) s = invalidArgument("ptr is NULL");
  if (s.ok() && size == 0) s = invalidArgument("size 0");
  if (s.ok()) s = c->device().allocDevice(size, ptr);
  return report(s.withContext("hclCommMemAlloc"), comm);
}

hclResult_t hclCommMemFree(hclComm_t comm, void* ptr) {
  std::shared_ptr<Communicator> c;
  Status s = checkCommEvenIfFailed(comm, c);
  if (s.ok() && ptr) s = c->device().freeDevice(ptr);
  return report(s.withContext("hclCommMemFree"), comm);
}

hclResult_t hclCommMemcpy(hclComm_t comm, void* dst, const void* src, size_t size) {
  std::shared_ptr<Communicator> c;
  Status s = checkCommEvenIfFailed(comm, c);
  if (s.ok() && size > 0 && (!dst || !src)) {
    s = invalidArgument(fmt::format("dst {} or src {} is NULL", dst, src));
  }
  if (s.ok() && size > 0) s = c->device().copy(dst, src, size);
  return report(s.withContext("hclCommMemcpy"), comm);
}

hclResult_t hclCommWrapStream(hclComm_t comm, void* nativeStream, hclStream_t* stream) {
  std::shared_ptr<Communicator> c;
  Status s = checkComm(comm, c);
  if (s.ok() && !stream) s = invalidArgument("stream (the output pointer) is NULL");
  std::unique_ptr<StreamGate> gate;
  if (s.ok()) s = c->device().openGate(nativeStream, gate);
  if (!s.ok()) return report(s.withContext("hclCommWrapStream"), comm);
  std::unique_ptr<hclStream> h;
  s = noThrow("hclCommWrapStream", [&]() -> Status {
    h = std::make_unique<hclStream>();
    h->impl = std::make_unique<GatedStream>(c->device().kind(), std::move(gate));
    return {};
  });
  if (!s.ok()) return report(s, comm);
  registerHandle(h.get());
  *stream = h.release();  // owned by the registry until hclStreamDestroy
  return hclSuccess;
}

}  // extern "C"
