// The device seam. CPU is a real device; CUDA and HIP implement the same
// interface (loaded at run time) in later work.
#pragma once

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
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string vendor() const = 0;
  virtual int index() const = 0;
  // True when `ptr` is memory this device computes on directly.
  virtual bool addresses(const void* ptr) const = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void reduce(void* dst, Form dstForm, const void* a, Form aForm, const void* b,
                      Form bForm, size_t count, const ReduceSpec& spec) = 0;
  virtual void convert(void* dst, Form dstForm, const void* src, Form srcForm, size_t count,
                       const ReduceSpec& spec) = 0;
  virtual std::unique_ptr<Stream> createStream() = 0;
};

// The process's CPU device.
Device& cpuDevice();

}  // namespace hcl
