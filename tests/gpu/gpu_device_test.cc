// The CUDA or HIP device plugin on a real GPU (built once per vendor; the HIP
// build defines HCL_GPU_HIP). Every case skips, saying why, where the runtime
// has no driver or no device. The test uses the runtime itself (its own copy,
// as an application would) for user streams and for checking memory.
#include <dlfcn.h>
#include <sys/uio.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include "gpu_operands.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "collectives/reduce/float_formats.h"
#include "collectives/reduce/reduce.h"
#include "device/device.h"
#include "device/gpu/gpu_api.h"

namespace hcl {
namespace {

using gputest::makeOperand;
using gputest::sameResult;

#define GPU_OK(expr) ASSERT_EQ((expr), gpuSuccess) << #expr << ": " << gpuGetErrorString(expr)
#define HCL_OK(expr)                              \
  do {                                            \
    const ::hcl::Status s_ = (expr);              \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.message(); \
  } while (0)

DeviceRuntime* loadRuntime() {
  void* h = dlopen(HCL_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto entry = reinterpret_cast<DevicePluginEntry>(dlsym(h, kDevicePluginSymbol));
  char err[256] = "";
  return entry ? entry(kDevicePluginAbi, err, sizeof err) : nullptr;
}

class GpuDeviceTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    runtime_ = loadRuntime();
    if (!runtime_) {
      skip_ = std::string("cannot load ") + HCL_PLUGIN_PATH + ": " + (dlerror() ? dlerror() : "entry failed");
      return;
    }
    int n = 0;
    const Status s = runtime_->deviceCount(&n);
    if (!s.ok()) {
      skip_ = "no GPU to test on: " + s.message();
      return;
    }
    const Status d = runtime_->device(0, &device_);
    if (!d.ok()) skip_ = "device 0: " + d.message();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_EQ(gpuSetDevice(0), gpuSuccess);
  }

  static void* devAlloc(size_t bytes) {
    void* p = nullptr;
    EXPECT_TRUE(device_->allocDevice(bytes ? bytes : 1, &p).ok());
    return p;
  }

  static inline DeviceRuntime* runtime_ = nullptr;
  static inline Device* device_ = nullptr;
  static inline std::string skip_;
};

// ---- reduce / convert vs the CPU reference ----

constexpr ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max,
                                 ReduceKind::Min, ReduceKind::Avg,  ReduceKind::PreMulSum};



ReduceSpec specFor(hclDataType_t t, ReduceKind k) {
  ReduceSpec s;
  s.type = t;
  s.kind = k;
  s.scalarFloat = 0.3;
  s.scalarInt = -3;
  s.scalarUint = 5;
  s.nranks = 3;
  return s;
}

void upload(void* d, const std::vector<uint8_t>& h) {
  if (!h.empty()) {
    ASSERT_EQ(gpuMemcpy(d, h.data(), h.size(), gpuMemcpyDefault), gpuSuccess);
    // A copy from pageable memory may return before its DMA lands, and the
    // device's own stream does not wait for the legacy default stream.
    ASSERT_EQ(gpuDeviceSynchronize(), gpuSuccess);
  }
}
std::vector<uint8_t> download(const void* d, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  if (bytes) {
    EXPECT_EQ(gpuMemcpy(h.data(), d, bytes, gpuMemcpyDefault), gpuSuccess);
  }
  return h;
}

std::string what(const char* op, hclDataType_t t, ReduceKind k, Form d, Form a, Form b, size_t n) {
  auto f = [](Form x) { return x == Form::Native ? "N" : "A"; };
  return std::string(op) + " " + dataTypeName(t) + " " + reduceKindName(k) + " dst=" + f(d) + " a=" + f(a) +
         " b=" + f(b) + " n=" + std::to_string(n);
}

void expectSame(const std::string& w, hclDataType_t t, Form df, const std::vector<uint8_t>& want,
                const std::vector<uint8_t>& got) {
  ASSERT_EQ(want.size(), got.size());
  const size_t es = formElementSize(t, df);
  for (size_t i = 0; i < want.size() / es; ++i)
    ASSERT_TRUE(sameResult(t, df, &want[i * es], &got[i * es])) << w << " differs at element " << i;
}

TEST_F(GpuDeviceTest, ReduceMatchesCpuForEveryTypeKindAndForm) {
  std::mt19937_64 rng(3);
  const size_t kBig = (size_t(1) << 20) + 3;
  const size_t maxBytes = kBig * 8;
  void* dA = devAlloc(maxBytes);
  void* dB = devAlloc(maxBytes);
  void* dD = devAlloc(maxBytes);
  for (int ti = 0; ti < hclNumTypes; ++ti) {
    const auto t = hclDataType_t(ti);
    for (ReduceKind k : kKinds) {
      const ReduceSpec spec = specFor(t, k);
      for (int forms = 0; forms < 8; ++forms) {
        const Form df = forms & 1 ? Form::Acc : Form::Native, af = forms & 2 ? Form::Acc : Form::Native,
                   bf = forms & 4 ? Form::Acc : Form::Native;
        std::vector<size_t> counts = {0, 1, 7, 4099};
        if (forms == 0 || forms == 3 || forms == 6) counts.push_back(kBig);  // NNN, AAN, NAA
        for (size_t n : counts) {
          const auto a = makeOperand(t, af, n, rng), b = makeOperand(t, bf, n, rng);
          std::vector<uint8_t> want(n * formElementSize(t, df));
          hcl::reduce(want.data(), df, a.data(), af, b.data(), bf, n, spec);
          upload(dA, a);
          upload(dB, b);
          const std::string w = what("reduce", t, k, df, af, bf, n);
          const Status s = device_->reduce(dD, df, dA, af, dB, bf, n, spec);
          ASSERT_TRUE(s.ok()) << w << ": " << s.message();
          expectSame(w, t, df, want, download(dD, want.size()));
        }
      }
    }
  }
  HCL_OK(device_->freeDevice(dA));
  HCL_OK(device_->freeDevice(dB));
  HCL_OK(device_->freeDevice(dD));
}

TEST_F(GpuDeviceTest, ConvertMatchesCpuForEveryTypeKindAndForm) {
  std::mt19937_64 rng(5);
  const size_t kBig = (size_t(1) << 20) + 1;
  void* dS = devAlloc(kBig * 8);
  void* dD = devAlloc(kBig * 8);
  for (int ti = 0; ti < hclNumTypes; ++ti) {
    const auto t = hclDataType_t(ti);
    for (ReduceKind k : kKinds) {
      const ReduceSpec spec = specFor(t, k);
      for (int forms = 0; forms < 4; ++forms) {
        const Form df = forms & 1 ? Form::Acc : Form::Native, sf = forms & 2 ? Form::Acc : Form::Native;
        for (size_t n : {size_t(0), size_t(1), size_t(9), size_t(5003), kBig}) {
          const auto src = makeOperand(t, sf, n, rng);
          std::vector<uint8_t> want(n * formElementSize(t, df));
          hcl::convert(want.data(), df, src.data(), sf, n, spec);
          upload(dS, src);
          const std::string w = what("convert", t, k, df, sf, sf, n);
          const Status s = device_->convert(dD, df, dS, sf, n, spec);
          ASSERT_TRUE(s.ok()) << w << ": " << s.message();
          expectSame(w, t, df, want, download(dD, want.size()));
        }
      }
    }
  }
  HCL_OK(device_->freeDevice(dS));
  HCL_OK(device_->freeDevice(dD));
}

// dst exactly aliasing an operand, also where the two forms differ in size
// (in-place widening and narrowing of fp16/bf16/fp8).
TEST_F(GpuDeviceTest, InPlaceReduceAndConvertMatchCpu) {
  std::mt19937_64 rng(9);
  void* dX = devAlloc(size_t(70001) * 8);
  void* dY = devAlloc(size_t(70001) * 8);
  for (int ti = 0; ti < hclNumTypes; ++ti) {
    const auto t = hclDataType_t(ti);
    for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Avg, ReduceKind::PreMulSum}) {
      const ReduceSpec spec = specFor(t, k);
      for (int forms = 0; forms < 8; ++forms) {
        const Form df = forms & 1 ? Form::Acc : Form::Native, af = forms & 2 ? Form::Acc : Form::Native,
                   bf = forms & 4 ? Form::Acc : Form::Native;
        for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(70001)}) {
          // dst == a: the buffer holds a (in af) and receives dst (in df).
          const size_t bytes = n * std::max(formElementSize(t, af), formElementSize(t, df));
          auto a = makeOperand(t, af, n, rng);
          a.resize(bytes);
          const auto b = makeOperand(t, bf, n, rng);
          std::vector<uint8_t> want = a;
          hcl::reduce(want.data(), df, want.data(), af, b.data(), bf, n, spec);
          upload(dX, a);
          upload(dY, b);
          const std::string w = what("reduce in place", t, k, df, af, bf, n);
          const Status s = device_->reduce(dX, df, dX, af, dY, bf, n, spec);
          ASSERT_TRUE(s.ok()) << w << ": " << s.message();
          want.resize(n * formElementSize(t, df));
          expectSame(w, t, df, want, download(dX, want.size()));

          // convert in place: af -> df
          std::vector<uint8_t> cw = a;
          hcl::convert(cw.data(), df, cw.data(), af, n, spec);
          upload(dX, a);
          const std::string cwhat = what("convert in place", t, k, df, af, af, n);
          const Status cs = device_->convert(dX, df, dX, af, n, spec);
          ASSERT_TRUE(cs.ok()) << cwhat << ": " << cs.message();
          cw.resize(n * formElementSize(t, df));
          expectSame(cwhat, t, df, cw, download(dX, cw.size()));
        }
      }
    }
  }
  HCL_OK(device_->freeDevice(dX));
  HCL_OK(device_->freeDevice(dY));
}

// ---- memory ----

TEST_F(GpuDeviceTest, IsDeviceMemoryAndOwner) {
  void* d = devAlloc(4096);
  void* pinned = nullptr;
  HCL_OK(device_->allocPinned(4096, &pinned));
  std::vector<char> host(4096);
  EXPECT_TRUE(device_->isDeviceMemory(d));
  EXPECT_TRUE(device_->isDeviceMemory(static_cast<char*>(d) + 100));
  EXPECT_FALSE(device_->isDeviceMemory(pinned));
  EXPECT_FALSE(device_->isDeviceMemory(host.data()));
  EXPECT_FALSE(device_->isDeviceMemory(nullptr));
  EXPECT_EQ(runtime_->owner(d), 0);
  EXPECT_EQ(runtime_->owner(pinned), -1);
  EXPECT_EQ(runtime_->owner(host.data()), -1);
  EXPECT_EQ(gpuGetLastError(), gpuSuccess) << "a failed pointer query left an error behind";
  int cur = -1;
  HCL_OK(runtime_->currentDevice(&cur));
  EXPECT_EQ(cur, 0);
  EXPECT_EQ(device_->kind(), gpu::kKind);
  EXPECT_EQ(device_->index(), 0);
  const GpuDirectSupport g = device_->gpuDirect();
  std::printf("gpuDirect: dmabuf=%d peermem=%d (%s)\n", g.dmabuf, g.peermem, g.detail.c_str());
  EXPECT_FALSE(g.detail.empty());
  HCL_OK(device_->freePinned(pinned));
  HCL_OK(device_->freeDevice(d));
}

// Bounce buffers are read and written by peers on the host with
// process_vm_readv/writev, so pinned memory must allow both.
TEST_F(GpuDeviceTest, PinnedMemoryIsReachableWithProcessVm) {
  const size_t n = 1 << 20;
  void* pinned = nullptr;
  HCL_OK(device_->allocPinned(n, &pinned));
  std::vector<uint8_t> src(n), back(n);
  for (size_t i = 0; i < n; ++i) src[i] = uint8_t(i * 13 + 5);
  iovec local{src.data(), n}, remote{pinned, n};
  ASSERT_EQ(process_vm_writev(getpid(), &local, 1, &remote, 1, 0), static_cast<ssize_t>(n)) << std::strerror(errno);
  local = {back.data(), n};
  ASSERT_EQ(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), static_cast<ssize_t>(n)) << std::strerror(errno);
  EXPECT_EQ(src, back);
  // The device reaches it too.
  void* d = devAlloc(n);
  std::fill(back.begin(), back.end(), 0);
  HCL_OK(device_->copy(d, pinned, n));
  HCL_OK(device_->copy(back.data(), d, n));
  EXPECT_EQ(src, back);
  HCL_OK(device_->freeDevice(d));
  HCL_OK(device_->freePinned(pinned));
}

TEST_F(GpuDeviceTest, CopyBetweenHostAndDevice) {
  std::vector<uint8_t> src(100000), back(100000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7 + 1);
  void* d1 = devAlloc(src.size());
  void* d2 = devAlloc(src.size());
  HCL_OK(device_->copy(d1, src.data(), src.size()));
  HCL_OK(device_->copy(d2, d1, src.size()));
  HCL_OK(device_->copy(back.data(), d2, src.size()));
  EXPECT_EQ(src, back);
  HCL_OK(device_->copy(d1, d1, 0));
  HCL_OK(device_->freeDevice(d1));
  HCL_OK(device_->freeDevice(d2));
}

// ---- copy queue ----

TEST_F(GpuDeviceTest, CopyQueueRoundTrips2DWithTickets) {
  std::unique_ptr<CopyQueue> q;
  HCL_OK(device_->createCopyQueue(q));
  const size_t width = 300, height = 50, hostPitch = 512, devPitch = 384;
  void* pinned = nullptr;
  HCL_OK(device_->allocPinned(hostPitch * height, &pinned));
  std::vector<uint8_t> pageable(hostPitch * height, 0xEE);
  auto* src = static_cast<uint8_t*>(pinned);
  for (size_t i = 0; i < hostPitch * height; ++i) src[i] = uint8_t(i * 13 + 5);
  void* d1 = devAlloc(devPitch * height);
  void* d2 = devAlloc(devPitch * height);

  uint64_t t1 = 0, t2 = 0, t3 = 0;
  HCL_OK(q->copy2D(d1, devPitch, src, hostPitch, width, height));  // H2D from pinned
  HCL_OK(q->mark(&t1));
  HCL_OK(q->copy2D(d2, devPitch, d1, devPitch, width, height));  // D2D
  HCL_OK(q->mark(&t2));
  HCL_OK(q->copy2D(pageable.data(), hostPitch, d2, devPitch, width, height));  // D2H to pageable
  HCL_OK(q->mark(&t3));
  EXPECT_LT(t1, t2);
  EXPECT_LT(t2, t3);
  bool done = false;
  for (int i = 0; i < 100000 && !done; ++i) {
    HCL_OK(q->poll(t3, &done));
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  ASSERT_TRUE(done);
  HCL_OK(q->poll(t1, &done));  // earlier tickets are complete too
  EXPECT_TRUE(done);
  for (size_t r = 0; r < height; ++r)
    for (size_t c = 0; c < hostPitch; ++c)
      ASSERT_EQ(pageable[r * hostPitch + c], c < width ? src[r * hostPitch + c] : 0xEE) << r << "," << c;

  // Contiguous copies and drain.
  std::vector<uint8_t> back(width * height);
  HCL_OK(q->copy(d1, src, width * height));
  HCL_OK(q->copy(back.data(), d1, width * height));
  HCL_OK(q->drain());
  EXPECT_EQ(0, std::memcmp(back.data(), src, back.size()));
  uint64_t t4 = 0;
  HCL_OK(q->mark(&t4));
  HCL_OK(q->drain());
  HCL_OK(q->poll(t4, &done));
  EXPECT_TRUE(done);
  EXPECT_FALSE(q->poll(t4 + 1, &done).ok()) << "a ticket never issued";
  q.reset();
  HCL_OK(device_->freePinned(pinned));
  HCL_OK(device_->freeDevice(d1));
  HCL_OK(device_->freeDevice(d2));
}

// ---- stream gate ----

// hold() after a memset on the user's stream; the worker sees the memset,
// writes new data, releases; a D2H copy enqueued after hold() sees the write.
void gateRoundTrip(Device* dev, gpuStream_t stream) {
  const size_t n = 1 << 20;
  void* d = nullptr;
  HCL_OK(dev->allocDevice(n, &d));
  void* pinned = nullptr;
  HCL_OK(dev->allocPinned(n, &pinned));
  std::memset(pinned, 0, n);
  std::unique_ptr<StreamGate> gate;
  HCL_OK(dev->openGate(stream, gate));

  GPU_OK(gpuMemsetAsync(d, 0x11, n, stream));
  uint64_t ticket = 0;
  HCL_OK(gate->hold(&ticket));
  GPU_OK(gpuMemcpyAsync(pinned, d, n, gpuMemcpyDefault, stream));

  std::atomic<bool> mayRelease{false};
  std::string workerError;
  std::thread worker([&] {
    if (Status s = gate->waitStart(ticket); !s.ok()) workerError = "waitStart: " + s.message();
    std::vector<uint8_t> seen(n), fresh(n, 0x22);
    if (Status s = dev->copy(seen.data(), d, n); !s.ok()) workerError = "copy: " + s.message();
    for (size_t i = 0; i < n && workerError.empty(); ++i)
      if (seen[i] != 0x11) workerError = "worker saw " + std::to_string(seen[i]) + " at " + std::to_string(i);
    if (Status s = dev->copy(d, fresh.data(), n); !s.ok()) workerError = "copy: " + s.message();
    while (!mayRelease.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    gate->release(ticket);
  });
  // The stream must stay held until release.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const Status q = gate->query();
  EXPECT_EQ(q.code(), hclInProgress) << q.message();
  EXPECT_EQ(static_cast<uint8_t*>(pinned)[0], 0) << "the D2H copy ran before release";
  mayRelease = true;
  worker.join();
  EXPECT_TRUE(workerError.empty()) << workerError;
  HCL_OK(gate->synchronize());
  HCL_OK(gate->query());
  const auto* h = static_cast<const uint8_t*>(pinned);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], 0x22) << "at " << i;
  gate.reset();
  HCL_OK(dev->freePinned(pinned));
  HCL_OK(dev->freeDevice(d));
}

// Many tickets in flight, served in order by one worker thread.
void gateManyTickets(Device* dev, gpuStream_t stream) {
  const size_t n = 4096;
  const int kTickets = 50;
  void* d = nullptr;
  HCL_OK(dev->allocDevice(n, &d));
  std::unique_ptr<StreamGate> gate;
  HCL_OK(dev->openGate(stream, gate));
  GPU_OK(gpuMemsetAsync(d, 0, n, stream));
  std::vector<uint64_t> tickets;
  for (int k = 1; k <= kTickets; ++k) {
    uint64_t t = 0;
    HCL_OK(gate->hold(&t));
    tickets.push_back(t);
    GPU_OK(gpuMemsetAsync(d, k, n, stream));  // runs after release(t)
  }
  std::string err;
  std::thread worker([&] {
    std::vector<uint8_t> seen(n);
    for (int k = 1; k <= kTickets; ++k) {
      if (Status s = gate->waitStart(tickets[k - 1]); !s.ok()) err = s.message();
      if (Status s = dev->copy(seen.data(), d, n); !s.ok()) err = s.message();
      // Before ticket k the stream ran the memset of k-1 (which overwrote the worker's last write).
      if (err.empty() && seen[n / 2] != uint8_t(k - 1))
        err = "ticket " + std::to_string(k) + " saw " + std::to_string(seen[n / 2]);
      std::vector<uint8_t> mine(n, uint8_t(200 + k % 50));
      if (Status s = dev->copy(d, mine.data(), n); !s.ok()) err = s.message();
      gate->release(tickets[k - 1]);
    }
  });
  worker.join();
  EXPECT_TRUE(err.empty()) << err;
  HCL_OK(gate->synchronize());
  std::vector<uint8_t> last(n);
  HCL_OK(dev->copy(last.data(), d, n));
  EXPECT_EQ(last[0], uint8_t(kTickets));
  gate.reset();
  HCL_OK(dev->freeDevice(d));
}

TEST_F(GpuDeviceTest, StreamGateOrdersUserStreamAroundHclWork) {
  gpuStream_t s = nullptr;
  GPU_OK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
  gateRoundTrip(device_, s);
  gateManyTickets(device_, s);
  GPU_OK(gpuStreamDestroy(s));
}

TEST_F(GpuDeviceTest, StreamGateOnTheDefaultStream) {
  gateRoundTrip(device_, nullptr);
  gateManyTickets(device_, nullptr);
}

// The same, with the spin-kernel fallback (forced through a fresh runtime,
// which picks the wait method when it opens the device).
TEST_F(GpuDeviceTest, StreamGateSpinKernelFallback) {
  setenv("HCL_GPU_GATE", "spin", 1);
  DeviceRuntime* rt = loadRuntime();
  ASSERT_NE(rt, nullptr);
  Device* dev = nullptr;
  const Status s = rt->device(0, &dev);
  unsetenv("HCL_GPU_GATE");
  HCL_OK(s);
  gpuStream_t stream = nullptr;
  GPU_OK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
  gateRoundTrip(dev, stream);
  gateManyTickets(dev, stream);
  GPU_OK(gpuStreamDestroy(stream));
}

TEST_F(GpuDeviceTest, HclStreamRunsJobsInOrderWithTheDeviceCurrent) {
  std::unique_ptr<Stream> s = device_->createStream();
  EXPECT_EQ(s->deviceKind(), gpu::kKind);
  std::vector<int> order;
  for (int i = 0; i < 10; ++i)
    s->enqueue([&order, i] {
      int cur = -1;
      if (gpuGetDevice(&cur) != gpuSuccess || cur != 0) return internalError("device not current");
      order.push_back(i);
      return Status{};
    });
  HCL_OK(s->synchronize());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  s->enqueue([] { return internalError("boom"); });
  EXPECT_FALSE(s->synchronize().ok());
  HCL_OK(s->query());
}

}  // namespace
}  // namespace hcl
