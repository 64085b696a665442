// The sim device's native streams, its copy engine and its stream gates.
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/params.h"
#include "device/cpu/cpu_stream.h"
#include "device/sim/sim_device.h"
#include "device/sim/sim_internal.h"
#include "device/sim/sim_memory.h"

namespace hcl::sim {

namespace {
thread_local bool runningNativeStream = false;
}  // namespace

bool onNativeStream() { return runningNativeStream; }

NativeStream::NativeStream(size_t depth) : depth_(depth), queue_(std::make_unique<CpuStream>()) {}
NativeStream::~NativeStream() = default;

void NativeStream::launch(std::function<void()> task) {
  {
    std::unique_lock lock(mutex_);
    if (depth_ > 0) drained_.wait(lock, [this] { return pending_ < depth_; });
    ++pending_;
  }
  queue_->enqueue([this, task = std::move(task)]() -> Status {
    runningNativeStream = true;
    task();
    runningNativeStream = false;
    {
      std::lock_guard lock(mutex_);
      --pending_;
    }
    drained_.notify_all();
    return {};
  });
}

void NativeStream::synchronize() { (void)queue_->synchronize(); }

bool NativeStream::idle() { return queue_->query().ok(); }

namespace {

// Counters that one side raises and the other waits on.
struct Progress {
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t value = 0;

  void raise(uint64_t v) {
    {
      std::lock_guard lock(mutex);
      if (v > value) value = v;
    }
    changed.notify_all();
  }
  void waitFor(uint64_t v) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return value >= v; });
  }
  uint64_t get() {
    std::lock_guard lock(mutex);
    return value;
  }
};

}  // namespace

void HardwareQueue::stop() {
  std::lock_guard lock(mutex_);
  ++stopped_;
}

void HardwareQueue::resume() {
  {
    std::lock_guard lock(mutex_);
    --stopped_;
  }
  resumed_.notify_all();
}

uint64_t HardwareQueue::takeTurn() {
  std::lock_guard lock(mutex_);
  return ++issued_;
}

void HardwareQueue::awaitTurn(uint64_t turn) {
  std::unique_lock lock(mutex_);
  turned_.wait(lock, [&] { return ran_ + 1 == turn; });
}

void HardwareQueue::leaveTurn(uint64_t turn) {
  {
    std::lock_guard lock(mutex_);
    ran_ = turn;
  }
  turned_.notify_all();
}

bool HardwareQueue::stopped() {
  std::lock_guard lock(mutex_);
  return stopped_ > 0;
}

void HardwareQueue::waitUntilFlowing() {
  std::unique_lock lock(mutex_);
  resumed_.wait(lock, [this] { return stopped_ == 0; });
}

namespace {

class SimCopyQueue final : public CopyQueue {
 public:
  SimCopyQueue(const MemoryMap& memory, HardwareQueue& hardware)
      : memory_(memory), hardware_(paramBool("HCL_SIM_SHARED_QUEUE") ? &hardware : nullptr) {
    const int64_t gbps = paramInt("HCL_SIM_COPY_GBPS");
    bytesPerUs_ = gbps > 0 ? static_cast<double>(gbps) * 1000.0 : 0.0;
  }
  ~SimCopyQueue() override { (void)engine_.synchronize(); }

  Status copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                size_t height) override {
    const bool dstDevice = memory_.contains(dst), srcDevice = memory_.contains(src);
    engine_.enqueue([=, this]() -> Status {
      if (hardware_) hardware_->waitUntilFlowing();
      const auto start = std::chrono::steady_clock::now();
      for (size_t row = 0; row < height; ++row) {
        transfer(static_cast<std::byte*>(dst) + row * dstPitch, dstDevice,
                 static_cast<const std::byte*>(src) + row * srcPitch, srcDevice, width);
      }
      if (bytesPerUs_ > 0) {
        const auto cost = std::chrono::microseconds(static_cast<int64_t>(width * height / bytesPerUs_));
        std::this_thread::sleep_until(start + cost);
      }
      return {};
    });
    return {};
  }
  Status mark(uint64_t* ticket) override {
    const uint64_t t = ++issued_;
    engine_.enqueue([this, t]() -> Status {
      done_.raise(t);
      return {};
    });
    *ticket = t;
    return {};
  }
  Status poll(uint64_t ticket, bool* done) override {
    *done = done_.get() >= ticket;
    return {};
  }
  Status drain() override { return engine_.synchronize(); }

 private:
  const MemoryMap& memory_;
  HardwareQueue* hardware_;  // null: copies do not wait for stopped streams
  double bytesPerUs_ = 0;
  uint64_t issued_ = 0;
  Progress done_;
  CpuStream engine_;  // last: its worker stops before the members above go
};

// One segment of an IPC collective; every pointer is sim device memory
// (this device's, or a peer's mapped here).
void runSegment(const IpcSegment& seg, const ReduceSpec& spec) {
  if (seg.nsrc == 0 || seg.ndst == 0) return;
  if (seg.op == IpcSegment::Copy) {
    for (uint32_t d = 0; d < seg.ndst; ++d) {
      if (seg.dst[d] != seg.src[0]) std::memmove(seg.dst[d], seg.src[0], seg.count);
    }
    return;
  }
  const size_t n = seg.count;
  std::vector<std::byte> in(n * formElementSize(spec.type, Form::Native));
  std::vector<std::byte> acc(n * formElementSize(spec.type, Form::Acc));
  std::vector<std::byte> out(in.size());
  auto load = [&](uint32_t s) { transfer(in.data(), false, seg.src[s], true, in.size()); };
  load(0);
  if (seg.nsrc == 1) {
    convert(out.data(), Form::Native, in.data(), Form::Native, n, spec);
  } else {
    convert(acc.data(), Form::Acc, in.data(), Form::Native, n, spec);
    for (uint32_t s = 1; s < seg.nsrc; ++s) {
      load(s);
      const bool last = s + 1 == seg.nsrc;
      reduce(last ? out.data() : acc.data(), last ? Form::Native : Form::Acc, acc.data(), Form::Acc, in.data(),
             Form::Native, n, spec);
    }
  }
  for (uint32_t d = 0; d < seg.ndst; ++d) transfer(seg.dst[d], true, out.data(), false, out.size());
}

class SimGate final : public StreamGate {
 public:
  SimGate(NativeStream& stream, const MemoryMap& memory, HardwareQueue& hardware)
      : stream_(stream), memory_(memory), waits_(hardware.pendingWaits), state_(makeState(hardware)) {}
  SimGate(std::unique_ptr<NativeStream> owned, const MemoryMap& memory, HardwareQueue& hardware)
      : owned_(std::move(owned)), stream_(*owned_), memory_(memory), waits_(hardware.pendingWaits),
        state_(makeState(hardware)) {}
  ~SimGate() override { state_->released.raise(UINT64_MAX); }

  Status mark(uint64_t* ticket) override {
    const uint64_t t = ++issued_;
    command([state = state_, t] { state->started.raise(t); });
    *ticket = t;
    return {};
  }
  Status waitFor(uint64_t ticket) override {
    const auto deviceWide = waits_.issuing();
    waits_.waited(ticket);
    command([state = state_, ticket] {
      if (state->hardware) state->hardware->stop();
      state->released.waitFor(ticket);
      if (state->hardware) state->hardware->resume();
    });
    return {};
  }
  Status copyOnStream(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                      size_t height) override {
    const bool dstDevice = memory_.contains(dst), srcDevice = memory_.contains(src);
    // CUDA runs a copy between host buffers at once, not in stream order:
    // the sim refuses what HCL must never put on a stream.
    if (!dstDevice && !srcDevice) {
      return internalError("sim: a host-to-host copy was put on a stream, where a device runtime runs it out of order");
    }
    command([=, state = state_] {
      state->takeTime(width * height);
      for (size_t row = 0; row < height; ++row) {
        transfer(static_cast<std::byte*>(dst) + row * dstPitch, dstDevice,
                 static_cast<const std::byte*>(src) + row * srcPitch, srcDevice, width);
      }
    });
    return {};
  }
  Status segmentsOnStream(const IpcSegment* table, size_t n, size_t width, const ReduceSpec& spec) override {
    command([=, state = state_] {
      state->takeTime(width * formElementSize(spec.type, Form::Native));
      for (size_t i = 0; i < n; ++i) runSegment(table[i], spec);
    });
    return {};
  }
  Status pollStart(uint64_t ticket, bool* done) override {
    *done = state_->started.get() >= ticket;
    return {};
  }
  Status waitStart(uint64_t ticket) override {
    state_->started.waitFor(ticket);
    return {};
  }
  void release(uint64_t ticket) override {
    state_->released.raise(ticket);
    waits_.released(ticket);
  }
  uint64_t lastIssued() override { return issued_.load(); }
  Status synchronize() override {
    stream_.synchronize();
    return {};
  }
  Status query() override {
    if (stream_.idle()) return {};
    return {hclInProgress, "work pending on the sim stream"};
  }

 private:
  struct State {
    Progress started;
    Progress released;
    HardwareQueue* hardware = nullptr;  // set: commands take turns in the device's one queue
    double bytesPerUs = 0;              // HCL_SIM_COPY_GBPS; 0: no delay
    // A command that moves `bytes` takes its time before the data moves, so
    // memory it reads must stay valid until the stream is past it.
    void takeTime(size_t bytes) const {
      if (bytesPerUs > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(bytes / bytesPerUs)));
    }
  };
  // A command on the native stream; with one hardware queue, in the
  // device's order of all streams' commands.
  void command(std::function<void()> body) {
    HardwareQueue* hardware = state_->hardware;
    const uint64_t turn = hardware ? hardware->takeTurn() : 0;
    stream_.launch([hardware, turn, body = std::move(body)] {
      if (hardware) hardware->awaitTurn(turn);
      body();
      if (hardware) hardware->leaveTurn(turn);
    });
  }
  static std::shared_ptr<State> makeState(HardwareQueue& hardware) {
    auto state = std::make_shared<State>();
    if (paramBool("HCL_SIM_SHARED_QUEUE")) state->hardware = &hardware;
    const int64_t gbps = paramInt("HCL_SIM_COPY_GBPS");
    state->bytesPerUs = gbps > 0 ? static_cast<double>(gbps) * 1000.0 : 0.0;
    return state;
  }
  std::unique_ptr<NativeStream> owned_;  // first: destroyed after the gate has let its stream go
  NativeStream& stream_;
  const MemoryMap& memory_;
  GateWaits waits_;  // this gate's share of the device's pending waits
  std::shared_ptr<State> state_;
  std::atomic<uint64_t> issued_{0};
};

}  // namespace

std::unique_ptr<CopyQueue> makeCopyQueue(const MemoryMap& memory, HardwareQueue& hardware) {
  return std::make_unique<SimCopyQueue>(memory, hardware);
}

std::unique_ptr<StreamGate> makeGate(NativeStream& stream, const MemoryMap& memory, HardwareQueue& hardware) {
  return std::make_unique<SimGate>(stream, memory, hardware);
}

std::unique_ptr<StreamGate> makeOwningGate(std::unique_ptr<NativeStream> stream, const MemoryMap& memory,
                                           HardwareQueue& hardware) {
  return std::make_unique<SimGate>(std::move(stream), memory, hardware);
}

}  // namespace hcl::sim
