// include/nccl.h against NVIDIA's: every function and macro is usable from C
// and C++, a program compiled against NVIDIA's header links against HCL's
// libnccl.so.2, and the public structs have NVIDIA's layout.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "nccl.h"
#include "nccl_layout.h"

extern "C" int nccl_api_usage_c(void);
extern "C" int nccl_api_usage_cxx(void);
#ifdef HCL_TEST_HAVE_NVIDIA_NCCL_H
extern "C" int nccl_api_usage_nvidia(void);
extern "C" const size_t hcl_test_nvidia_layout[];
extern "C" const size_t hcl_test_nvidia_layout_count;
#endif

namespace {

constexpr const char* kNoNvidiaHeader =
    "NVIDIA's nccl.h (with cuda_runtime.h) was not found at configure time "
    "(looked in /usr/local/cuda); nothing to compare against";

TEST(NcclHeader, CProgramUsesEveryFunctionAndMacro) { EXPECT_EQ(nccl_api_usage_c(), 0); }

TEST(NcclHeader, CxxProgramUsesEveryFunctionAndMacro) { EXPECT_EQ(nccl_api_usage_cxx(), 0); }

TEST(NcclHeader, ProgramBuiltWithNvidiaHeaderRunsOnHcl) {
#ifdef HCL_TEST_HAVE_NVIDIA_NCCL_H
  EXPECT_EQ(nccl_api_usage_nvidia(), 0);
#else
  GTEST_SKIP() << kNoNvidiaHeader;
#endif
}

TEST(NcclHeader, StructLayoutMatchesNvidia) {
#ifdef HCL_TEST_HAVE_NVIDIA_NCCL_H
  const size_t mine[] = NCCL_LAYOUT_VALUES;
  const char* const names[] = NCCL_LAYOUT_NAMES;
  static_assert(sizeof mine / sizeof mine[0] == sizeof names / sizeof names[0]);
  ASSERT_EQ(hcl_test_nvidia_layout_count, sizeof mine / sizeof mine[0]);
  for (size_t i = 0; i < hcl_test_nvidia_layout_count; ++i) {
    EXPECT_EQ(mine[i], hcl_test_nvidia_layout[i]) << names[i];
  }
#else
  GTEST_SKIP() << kNoNvidiaHeader;
#endif
}

TEST(NcclHeader, StructLayoutIsTheDocumentedOne) {
  // Holds on every machine: the LP64 layout of ncclConfig_v22800.
  EXPECT_EQ(sizeof(ncclUniqueId), 128u);
  EXPECT_EQ(sizeof(ncclConfig_t), 80u);
  EXPECT_EQ(offsetof(ncclConfig_t, netName), 32u);
  EXPECT_EQ(offsetof(ncclConfig_t, splitShare), 40u);
  EXPECT_EQ(offsetof(ncclConfig_t, trafficClass), 44u);
  EXPECT_EQ(offsetof(ncclConfig_t, commName), 48u);
  EXPECT_EQ(offsetof(ncclConfig_t, nvlinkCentricSched), 76u);
  EXPECT_EQ(sizeof(ncclSimInfo_t), 24u);
  EXPECT_EQ(offsetof(ncclSimInfo_t, estimatedTime), 16u);
}

}  // namespace
