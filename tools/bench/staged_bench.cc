// How well the host-staged path overlaps its stages. N ranks (threads) run
// allreduce on device buffers, and the same allreduce on host buffers of CPU
// communicators (the network stage alone). A pipelined path takes about
// max(copy, network) per transfer; an unpipelined one copy + network + copy.
//
// On the sim device the copy engine is held to a set rate to stand in for
// PCIe. On a real GPU the copy stages are measured: one whole-buffer copy
// each way between device memory and pinned host memory on the device's own
// copy queue, the engine the staged path uses. The staged row runs with
// HCL_IPC_DISABLE=1 (ranks on one GPU would otherwise share memory by IPC);
// on a GPU a last row gives that IPC allreduce for comparison.
//
//   staged_bench [bytes=67108864] [sim copy GB/s=4] [iterations=7] [device=sim] [ranks=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/registry.h"
#include "hcl.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kDefaultStageChunk = size_t{1} << 20;  // HCL_STAGE_CHUNK_BYTES's default

double medianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "staged_bench: %s\n", what.c_str());
  std::exit(1);
}

// Median time of one allreduce of `bytes`, every rank on `device`; the
// slowest rank's median. With `pieceBytes`, the allreduce is made of one
// call per piece, as the staged path runs its network stage.
double allreduceMs(const std::string& device, int nranks, size_t bytes, int iterations, size_t pieceBytes = 0) {
  hclUniqueId id;
  if (hclGetUniqueId(&id) != hclSuccess) fail(hclGetLastError(nullptr));
  std::vector<std::vector<double>> times(static_cast<size_t>(nranks));
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < nranks; ++r) {
      ranks.emplace_back([&, r] {
        hclComm_t comm = nullptr;
        if (hclSetDevice(device.c_str()) != hclSuccess || hclCommInitRank(&comm, nranks, id, r) != hclSuccess) {
          fail(std::string("init on ") + device + ": " + hclGetLastError(nullptr));
        }
        void* buf = nullptr;
        std::vector<float> host(bytes / sizeof(float), 1.0f);
        if (hclCommMemAlloc(comm, &buf, bytes) != hclSuccess || hclCommMemcpy(comm, buf, host.data(), bytes) != hclSuccess) {
          fail(std::string("buffer: ") + hclGetLastError(comm));
        }
        for (int i = 0; i <= iterations; ++i) {
          const auto start = Clock::now();
          const size_t count = bytes / sizeof(float);
          const size_t piece = pieceBytes ? std::max<size_t>(1, pieceBytes / sizeof(float)) : count;
          for (size_t at = 0; at < count; at += piece) {
            if (hclAllReduce(static_cast<float*>(buf) + at, static_cast<float*>(buf) + at, std::min(piece, count - at),
                             hclFloat, hclSum, comm, nullptr) != hclSuccess) {
              fail(std::string("allreduce: ") + hclGetLastError(comm));
            }
          }
          if (i > 0) times[static_cast<size_t>(r)].push_back(msSince(start));  // the first allocates bounce buffers
        }
        hclCommMemFree(comm, buf);
        hclCommDestroy(comm);
      });
    }
  }
  double slowest = 0;
  for (auto& t : times) slowest = std::max(slowest, medianMs(t));
  return slowest;
}

struct CopyTimes {
  double toHostMs, toDeviceMs;
};

// Whole-buffer copies between device memory and pinned host memory on the
// device's copy queue; medians.
CopyTimes measureCopies(const std::string& device, size_t bytes, int iterations) {
  hcl::DeviceChoice choice;
  if (!hcl::parseDeviceChoice(device, choice)) fail("bad device " + device);
  hcl::Device* dev = nullptr;
  std::string note;
  if (auto s = hcl::resolveDevice(choice, &dev, &note); !s.ok()) fail(s.message());
  void *devBuf = nullptr, *pinned = nullptr;
  std::unique_ptr<hcl::CopyQueue> queue;
  if (auto s = dev->allocDevice(bytes, &devBuf); !s.ok()) fail(s.message());
  if (auto s = dev->allocPinned(bytes, &pinned); !s.ok()) fail(s.message());
  if (auto s = dev->createCopyQueue(queue); !s.ok()) fail(s.message());
  auto timeCopy = [&](void* dst, const void* src) {
    std::vector<double> ms;
    for (int i = 0; i <= iterations; ++i) {
      const auto start = Clock::now();
      if (auto s = queue->copy(dst, src, bytes); !s.ok()) fail(s.message());
      if (auto s = queue->drain(); !s.ok()) fail(s.message());
      if (i > 0) ms.push_back(msSince(start));
    }
    return medianMs(ms);
  };
  CopyTimes t{timeCopy(pinned, devBuf), timeCopy(devBuf, pinned)};
  queue.reset();
  (void)dev->freePinned(pinned);
  (void)dev->freeDevice(devBuf);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (64u << 20);
  const double simGbps = argc > 2 ? std::atof(argv[2]) : 4.0;
  const int iterations = std::max(1, argc > 3 ? std::atoi(argv[3]) : 7);
  const std::string device = argc > 4 ? argv[4] : "sim";
  const int nranks = std::max(1, argc > 5 ? std::atoi(argv[5]) : 2);
  const bool sim = device.rfind("sim", 0) == 0;
  if (sim) setenv("HCL_SIM_COPY_GBPS", std::to_string(static_cast<int>(simGbps)).c_str(), 1);
  // The ranks are threads on one GPU: each stream needs a hardware queue of
  // its own (devices.md, "What ran where"). Before the first CUDA call; a
  // value the caller set is kept.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);

  CopyTimes copy{};
  if (sim) {
    copy.toHostMs = copy.toDeviceMs = static_cast<double>(bytes) / (simGbps * 1e6);
  } else {
    copy = measureCopies(device, bytes, iterations);
  }
  const char* chunkText = std::getenv("HCL_STAGE_CHUNK_BYTES");
  const size_t chunk = chunkText ? std::strtoull(chunkText, nullptr, 10) : kDefaultStageChunk;
  const double wholeMs = allreduceMs("cpu", nranks, bytes, iterations);
  // The staged path's network stage: host allreduces of one chunk each.
  const double netMs = allreduceMs("cpu", nranks, bytes, iterations, chunk);
  // Ranks on one device would take the IPC path, which skips host memory.
  const char* ipcSetting = std::getenv("HCL_IPC_DISABLE");
  const std::string ipcBefore = ipcSetting ? ipcSetting : "";
  setenv("HCL_IPC_DISABLE", "1", 1);
  const double stagedMs = allreduceMs(device, nranks, bytes, iterations);
  if (ipcSetting) {
    setenv("HCL_IPC_DISABLE", ipcBefore.c_str(), 1);
  } else {
    unsetenv("HCL_IPC_DISABLE");
  }
  const double ipcMs = sim ? 0.0 : allreduceMs(device, nranks, bytes, iterations);
  const double slowest = std::max({copy.toHostMs, copy.toDeviceMs, netMs});
  const double sum = netMs + copy.toHostMs + copy.toDeviceMs;
  std::printf("device %s, %d ranks, bytes %zu, chunk %zu\n", device.c_str(), nranks, bytes, chunk);
  if (sim) std::printf("sim copy engine held to %.0f GB/s\n", simGbps);
  std::printf("%-34s %10s %10s\n", "stage", "ms", "GB/s");
  auto row = [&](const char* name, double ms) {
    std::printf("%-34s %10.2f %10.2f\n", name, ms, static_cast<double>(bytes) / (ms * 1e6));
  };
  row("copy device->host", copy.toHostMs);
  row("copy host->device", copy.toDeviceMs);
  row("host allreduce, one call", wholeMs);
  row("network: host allreduce per chunk", netMs);
  row("staged allreduce (measured)", stagedMs);
  row("slowest stage", slowest);
  row("sum of stages (no overlap)", sum);
  std::printf("staged / slowest stage = %.2f, staged / sum = %.2f\n", stagedMs / slowest, stagedMs / sum);
  if (!sim) row("IPC allreduce (no host memory)", ipcMs);
  return 0;
}
