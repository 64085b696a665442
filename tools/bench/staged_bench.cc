// How well the host-staged path overlaps its stages. Two ranks (threads) run
// allreduce on device buffers of the sim device, whose copy engine is held
// to a set rate to stand in for PCIe, and the same allreduce on host buffers
// of CPU communicators (the network stage alone). A pipelined path takes
// about max(copy, network) per transfer; an unpipelined one copy + network +
// copy.
//
//   staged_bench [bytes=67108864] [copy GB/s=4] [iterations=7]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hcl.h"

namespace {

double medianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median time of one allreduce of `bytes` with both ranks on `device`.
double allreduceMs(const char* device, size_t bytes, int iterations) {
  hclUniqueId id;
  hclGetUniqueId(&id);
  std::vector<double> times[2];
  std::vector<std::jthread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      hclSetDevice(device);
      hclComm_t comm = nullptr;
      if (hclCommInitRank(&comm, 2, id, r) != hclSuccess) {
        std::fprintf(stderr, "init: %s\n", hclGetLastError(nullptr));
        std::exit(1);
      }
      void* buf = nullptr;
      hclCommMemAlloc(comm, &buf, bytes);
      std::vector<float> host(bytes / sizeof(float), 1.0f);
      hclCommMemcpy(comm, buf, host.data(), bytes);
      for (int i = 0; i <= iterations; ++i) {
        const auto start = std::chrono::steady_clock::now();
        hclAllReduce(buf, buf, bytes / sizeof(float), hclFloat, hclSum, comm, nullptr);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (i > 0) times[r].push_back(ms);  // the first run allocates the bounce buffers
      }
      hclCommMemFree(comm, buf);
      hclCommDestroy(comm);
    });
  }
  ranks.clear();
  return std::max(medianMs(times[0]), medianMs(times[1]));
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (64u << 20);
  const double gbps = argc > 2 ? std::atof(argv[2]) : 4.0;
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 7;
  setenv("HCL_SIM_COPY_GBPS", std::to_string(static_cast<int>(gbps)).c_str(), 1);
  const double copyMs = static_cast<double>(bytes) / (gbps * 1e6);
  const double netMs = allreduceMs("cpu", bytes, iterations);
  const double stagedMs = allreduceMs("sim", bytes, iterations);
  const double slowest = std::max(copyMs, netMs), sum = netMs + 2 * copyMs;
  std::printf("bytes %zu, copy engine %.0f GB/s, chunk %s\n", bytes, gbps,
              std::getenv("HCL_STAGE_CHUNK_BYTES") ? std::getenv("HCL_STAGE_CHUNK_BYTES") : "default");
  std::printf("%-34s %10s\n", "stage", "ms");
  std::printf("%-34s %10.2f\n", "copy device->host (each way)", copyMs);
  std::printf("%-34s %10.2f\n", "network: host allreduce", netMs);
  std::printf("%-34s %10.2f\n", "staged allreduce (measured)", stagedMs);
  std::printf("%-34s %10.2f\n", "slowest stage", slowest);
  std::printf("%-34s %10.2f\n", "sum of stages (no overlap)", sum);
  std::printf("staged / slowest stage = %.2f, staged / sum = %.2f\n", stagedMs / slowest, stagedMs / sum);
  return 0;
}
