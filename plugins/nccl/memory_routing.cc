#include "plugins/nccl/memory_routing.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cstring>

#include "core/group.h"
#include "core/log.h"
#include "plugins/nccl/abi.h"
#include "plugins/nccl/stream_routing.h"

namespace hcl::nccl {
namespace {

// The few CUDA runtime entry points needed, with their C signatures (enums
// and error codes passed as int). The runtime is opened once and never
// closed: CUDA must outlive every static destructor that might still use it.
class CudaRuntime {
 public:
  CudaRuntime() { load(); }

  bool usable() const { return pointerGetAttributes_ != nullptr; }

  MemoryKind classify(const void* ptr) const {
    // cudaPointerAttributes (CUDA 11+) starts with `int type`; the buffer is
    // larger than any version's struct.
    alignas(16) std::array<unsigned char, 256> attributes{};
    if (pointerGetAttributes_(attributes.data(), ptr) != 0) {
      getLastError_();  // clear the (non-sticky) error so the application never sees it
      return MemoryKind::Host;
    }
    int type = 0;
    std::memcpy(&type, attributes.data(), sizeof type);
    constexpr int kCudaMemoryTypeDevice = 2;
    return type == kCudaMemoryTypeDevice ? MemoryKind::CudaDevice : MemoryKind::Host;
  }

 private:
  using GetVersionFn = int (*)(int*);
  using GetDeviceCountFn = int (*)(int*);
  using PointerGetAttributesFn = int (*)(void*, const void*);
  using GetLastErrorFn = int (*)();

  void load() {
    // Prefer a runtime the application already loaded, so both agree.
    constexpr std::array kNames = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
    void* handle = nullptr;
    for (int mode : {RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
      for (const char* name : kNames) {
        if ((handle = dlopen(name, mode)) != nullptr) break;
      }
      if (handle) break;
    }
    if (!handle) {
      log::info(log::Init, "NCCL API: no CUDA runtime found; every buffer is host memory");
      return;
    }
    auto getVersion = reinterpret_cast<GetVersionFn>(dlsym(handle, "cudaRuntimeGetVersion"));
    auto getDeviceCount = reinterpret_cast<GetDeviceCountFn>(dlsym(handle, "cudaGetDeviceCount"));
    auto getAttributes = reinterpret_cast<PointerGetAttributesFn>(dlsym(handle, "cudaPointerGetAttributes"));
    auto getLastError = reinterpret_cast<GetLastErrorFn>(dlsym(handle, "cudaGetLastError"));
    int version = 0;
    if (!getVersion || !getDeviceCount || !getAttributes || !getLastError || getVersion(&version) != 0 ||
        version < 11000) {
      log::info(log::Init, "NCCL API: CUDA runtime {} is unusable (need 11.0 or newer); every buffer is host memory",
                version);
      return;
    }
    int devices = 0;
    const int err = getDeviceCount(&devices);
    if (err != 0 || devices < 1) {
      getLastError();
      log::info(log::Init, "NCCL API: CUDA runtime {} sees no device (error {}); every buffer is host memory", version,
                err);
      return;
    }
    log::info(log::Init, "NCCL API: CUDA runtime {} with {} device(s): device buffers are detected and refused",
              version, devices);
    getLastError_ = getLastError;
    pointerGetAttributes_ = getAttributes;
  }

  PointerGetAttributesFn pointerGetAttributes_ = nullptr;
  GetLastErrorFn getLastError_ = nullptr;
};

}  // namespace

const MemoryClassifier& cudaMemoryClassifier() {
  static const MemoryClassifier classifier = [](const void* ptr) {
    static const CudaRuntime runtime;
    return runtime.usable() ? runtime.classify(ptr) : MemoryKind::Host;
  };
  return classifier;
}

Status requireHostMemory(std::initializer_list<NamedBuffer> buffers, const MemoryClassifier& classify) {
  for (const NamedBuffer& b : buffers) {
    if (b.ptr && classify(b.ptr) == MemoryKind::CudaDevice) {
      return invalidArgument(fmt::format(
          "{} {} is CUDA device memory, but the communicator computes on the CPU (no usable CUDA device at init, or HCL_DEVICE=cpu)", b.name, b.ptr));
    }
  }
  return {};
}

}  // namespace hcl::nccl

namespace hcl::nccl {

ncclResult_t checkHostBuffers(const char* call, ncclComm_t comm, std::initializer_list<NamedBuffer> buffers,
                              InGroup inGroup) {
  // A GPU reaches both kinds of memory; for an unknown handle the call reports the handle.
  if (commPlace(comm) != CommPlace::Cpu) return ncclSuccess;
  const Status s = requireHostMemory(buffers, cudaMemoryClassifier());
  if (s.ok()) return ncclSuccess;
  const Status named = s.withContext(call);
  return report(inGroup == InGroup::Joins ? failGroup(named) : named, comm);
}

}  // namespace hcl::nccl
