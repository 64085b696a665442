// The device seam. The CPU device is built in; CUDA and HIP devices live in
// plugins (device/gpu) that are loaded at run time, so one build runs with or
// without a GPU runtime. A "sim" device stands in for a GPU in tests.
//
// Plugins are built from this tree with the same compiler and hand C++
// objects across the boundary; they must use only what the headers under
// device/ and core/status.h define inline (kDevicePluginAbi guards this).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "collectives/reduce/reduce.h"
#include "core/peer_info.h"
#include "core/status.h"

namespace hcl {

// An ordered queue of work. Work enqueued on a stream runs after all earlier
// work on it; later work waits for it.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual DeviceKind deviceKind() const = 0;
  // `job` is run on the stream's executor; its Status becomes the stream's
  // error if it fails (later jobs still run, see query()).
  virtual void enqueue(std::function<Status()> job) = 0;
  // Waits for every job enqueued so far; returns the first error since the
  // last synchronize, if any.
  virtual Status synchronize() = 0;
  // hclSuccess when idle, hclInProgress while work is pending, or the first error.
  virtual Status query() = 0;
  // Returns once fewer than `maxPending` jobs are queued or running.
  virtual void waitForRoom(size_t maxPending) = 0;
};

// The same-vendor IPC path (core/ipc_run.h) moves data between the device
// buffers of ranks on one host with commands on the caller's stream.

// What another process on the host opens to map an allocation of device
// memory (cudaIpcMemHandle_t is 64 bytes).
struct DeviceIpcHandle {
  uint8_t bytes[64] = {};
};

inline constexpr int kIpcMaxRanks = 16;

// One command of an IPC collective: every destination gets the sources
// combined (reduce: `count` elements of the call's type with its operator,
// the Native form in and out) or the one source copied (copy: `count` bytes).
struct IpcSegment {
  enum Op : uint32_t { Copy = 0, Reduce = 1 };
  uint32_t op = Copy;
  uint32_t nsrc = 0;
  uint32_t ndst = 0;
  uint32_t pad = 0;
  uint64_t count = 0;
  const void* src[kIpcMaxRanks] = {};
  void* dst[kIpcMaxRanks] = {};
};

// Ties HCL's work to a stream of the device runtime (cudaStream_t,
// hipStream_t). Tickets are issued and released in increasing order.
//
// The caller's thread, at enqueue time, puts commands on the native stream:
// mark() (a point HCL's worker can wait for), waitFor() (the stream stops
// until the worker releases a ticket) and copies. The worker itself never
// puts work on any device stream while the native stream may be stopped: a
// stopped stream can hold back other streams that share its hardware queue,
// so a copy the worker issued on its own stream could wait for the worker.
class StreamGate {
 public:
  virtual ~StreamGate() = default;
  // Issues a ticket and marks the work the native stream holds so far.
  virtual Status mark(uint64_t* ticket) = 0;
  // Makes work enqueued on the native stream later wait until release(ticket).
  virtual Status waitFor(uint64_t ticket) = 0;
  // A copy on the native stream, in its order; either side may be device or
  // pinned host memory.
  virtual Status copyOnStream(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                              size_t height) = 0;
  // Runs the `n` segments of `table` on the native stream, in its order
  // (the same-vendor IPC path). The table lives in pinned host memory and is
  // read when the command runs, not when it is issued: HCL's worker fills in
  // peers' addresses after the call was made, before it releases the ticket
  // the stream waits on. A segment with no sources or destinations does nothing.
  // `width`: the most work items any segment has (elements to reduce, or
  // 16-byte pieces to copy), for sizing the launch.
  virtual Status segmentsOnStream(const IpcSegment* table, size_t n, size_t width, const ReduceSpec& spec) = 0;
  // mark() then waitFor() the same ticket: the whole operation runs between.
  Status hold(uint64_t* ticket) {
    HCL_TRY(mark(ticket));
    return waitFor(*ticket);
  }
  // HCL's worker: whether the work marked with `ticket` has finished. Does not block.
  virtual Status pollStart(uint64_t ticket, bool* done) = 0;
  // HCL's worker: blocks until the work marked with `ticket` has finished.
  virtual Status waitStart(uint64_t ticket) = 0;
  // HCL's worker: lets the native stream run past `ticket`. Must be called
  // for every ticket, also when the work failed, or the stream never moves.
  virtual void release(uint64_t ticket) = 0;
  // The last ticket mark() issued (0: none); any thread.
  virtual uint64_t lastIssued() = 0;
  // The native stream itself.
  virtual Status synchronize() = 0;
  virtual Status query() = 0;
};

// An in-order queue of asynchronous copies (a copy engine). Either side of
// a copy may be host memory or this device's memory.
class CopyQueue {
 public:
  virtual ~CopyQueue() = default;
  // Copies `height` rows of `width` bytes; rows start `dstPitch` and
  // `srcPitch` bytes apart. Returns at once.
  virtual Status copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                        size_t height) = 0;
  Status copy(void* dst, const void* src, size_t bytes) { return copy2D(dst, bytes, src, bytes, bytes, 1); }
  // A ticket that completes once every copy enqueued before it has.
  virtual Status mark(uint64_t* ticket) = 0;
  // *done once `ticket` has completed. Does not block.
  virtual Status poll(uint64_t ticket, bool* done) = 0;
  // Blocks until every copy enqueued so far has completed.
  virtual Status drain() = 0;
};

// Whether a transport may send straight from this device's memory.
struct GpuDirectSupport {
  bool dmabuf = false;    // the device can export its memory as a dma-buf
  bool peermem = false;   // nvidia-peermem (or amdgpu's peer memory) is loaded
  std::string detail;     // why not, or how, for the log
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string vendor() const = 0;
  virtual int index() const = 0;  // the runtime's device ordinal; -1 for the CPU
  // True when `ptr` is memory of this device that the CPU cannot load or
  // store (cudaMalloc, hipMalloc). Host, pinned and managed memory: false.
  virtual bool isDeviceMemory(const void* ptr) const = 0;

  // Synchronous operations on memory the device computes on (device memory
  // for a GPU, host memory for the CPU). Reduce and convert follow the
  // contract of collectives/reduce/reduce.h.
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  virtual Status reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b, Form bForm,
                        size_t count, const ReduceSpec& spec) = 0;
  virtual Status convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                         const ReduceSpec& spec) = 0;

  // Memory. Pinned host memory is what the copy engines move fastest.
  virtual Status allocDevice(size_t bytes, void** ptr) = 0;
  virtual Status freeDevice(void* ptr) = 0;
  virtual Status allocPinned(size_t bytes, void** ptr) = 0;
  virtual Status freePinned(void* ptr) = 0;

  virtual Status createCopyQueue(std::unique_ptr<CopyQueue>& out) = 0;
  // A gate on a stream of this device's runtime; nullptr is its default stream.
  virtual Status openGate(void* nativeStream, std::unique_ptr<StreamGate>& out) = 0;
  // A gate on a new native stream that the gate owns and that does not
  // wait for the runtime's default stream: HCL's own work for calls made
  // without a stream.
  virtual Status openPrivateGate(std::unique_ptr<StreamGate>& out) = 0;
  // An HCL-owned stream (hclStreamCreate).
  virtual std::unique_ptr<Stream> createStream() = 0;

  // IPC between processes on one host (CUDA/HIP IPC). Supported: why not
  // otherwise. Export gives the handle of the allocation holding `ptr` and
  // ptr's offset in it; open maps a peer's allocation (its base), close
  // unmaps it. On a GPU, closing waits for all work on the device, which
  // never ends while a stream waits on a gate ticket that the closing thread
  // would release: close returns hclInProgress, closing nothing, while any
  // stream of this device waits on a ticket not yet released, and the
  // caller keeps the mapping and tries again later.
  virtual bool ipcSupported(std::string* whyNot) const {
    *whyNot = "the device has no IPC";
    return false;
  }
  virtual Status ipcExport(const void* ptr, DeviceIpcHandle* handle, uint64_t* offset) {
    return internalError("ipcExport: the device has no IPC");
  }
  virtual Status ipcOpen(const DeviceIpcHandle& handle, void** base) {
    return internalError("ipcOpen: the device has no IPC");
  }
  virtual Status ipcClose(void* base) { return {}; }

  virtual GpuDirectSupport gpuDirect() const { return {false, false, "not a GPU"}; }
};

// A loaded device runtime: CUDA, HIP, or the sim device.
class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual DeviceKind kind() const = 0;
  // Fails with a clear message when the runtime has no driver or no device.
  virtual Status deviceCount(int* count) = 0;
  // The calling thread's current device (cudaGetDevice).
  virtual Status currentDevice(int* index) = 0;
  // The device `index`; the runtime keeps it for the life of the process.
  virtual Status device(int index, Device** out) = 0;
  // The ordinal of the device that owns `ptr`, or -1 when it is not device
  // memory of this runtime.
  virtual int owner(const void* ptr) = 0;
};

// The process's CPU device.
Device& cpuDevice();

// The plugin entry point (extern "C" in each plugin). Returns nullptr and
// fills `error` when the plugin cannot serve, e.g. a different ABI.
inline constexpr int kDevicePluginAbi = 5;
using DevicePluginEntry = DeviceRuntime* (*)(int abi, char* error, size_t errorLen);
inline constexpr const char* kDevicePluginSymbol = "hclDeviceRuntimeCreate";

}  // namespace hcl
