// The init warning for ranks of one process on one GPU.
#include <gtest/gtest.h>

#include <vector>

#include "core/shared_gpu_warning.h"

namespace hcl {
namespace {

PeerInfo rank(int r, uint64_t process, DeviceKind kind, int index) {
  PeerInfo p;
  p.rank = r;
  p.processToken = process;
  p.deviceKind = kind;
  p.vendor = kind == DeviceKind::Cuda ? "cuda" : kind == DeviceKind::Hip ? "hip" : "cpu";
  p.deviceIndex = index;
  return p;
}

TEST(SharedGpuWarning, TheLowerRankOfTwoOnOneGpuInOneProcessWarns) {
  const std::vector<PeerInfo> peers{rank(0, 7, DeviceKind::Cuda, 0), rank(1, 8, DeviceKind::Cuda, 0),
                                    rank(2, 7, DeviceKind::Cuda, 0)};
  const std::string w = sharedGpuWarning(peers, 0, nullptr);
  EXPECT_NE(w.find("ranks 0 and 2 of this process share cuda:0"), std::string::npos) << w;
  EXPECT_NE(w.find("CUDA_DEVICE_MAX_CONNECTIONS=32"), std::string::npos) << w;
  EXPECT_EQ(sharedGpuWarning(peers, 2, nullptr), "");  // said once, by rank 0
  EXPECT_EQ(sharedGpuWarning(peers, 1, nullptr), "");  // alone in its process
}

TEST(SharedGpuWarning, EnoughCudaQueuesOtherGpusAndCpusDoNotWarn) {
  const std::vector<PeerInfo> cuda{rank(0, 7, DeviceKind::Cuda, 0), rank(1, 7, DeviceKind::Cuda, 0)};
  EXPECT_EQ(sharedGpuWarning(cuda, 0, "32"), "");
  EXPECT_NE(sharedGpuWarning(cuda, 0, "8"), "");
  const std::vector<PeerInfo> twoGpus{rank(0, 7, DeviceKind::Cuda, 0), rank(1, 7, DeviceKind::Cuda, 1)};
  EXPECT_EQ(sharedGpuWarning(twoGpus, 0, nullptr), "");
  const std::vector<PeerInfo> cpus{rank(0, 7, DeviceKind::Cpu, -1), rank(1, 7, DeviceKind::Cpu, -1)};
  EXPECT_EQ(sharedGpuWarning(cpus, 0, nullptr), "");
}

TEST(SharedGpuWarning, HipWarnsWhateverCudasVariableSays) {
  const std::vector<PeerInfo> hip{rank(0, 7, DeviceKind::Hip, 1), rank(1, 7, DeviceKind::Hip, 1)};
  const std::string w = sharedGpuWarning(hip, 0, "32");
  EXPECT_NE(w.find("share hip:1"), std::string::npos) << w;
  EXPECT_EQ(w.find("CUDA_DEVICE_MAX_CONNECTIONS"), std::string::npos) << w;
}

}  // namespace
}  // namespace hcl
