/*
 * Uses every function and macro of nccl.h. Compiled three times: as C and as
 * C++ against HCL's include/nccl.h, and as C against NVIDIA's nccl.h where it
 * is installed. Each build defines NCCL_API_USAGE_FN, the name of its check
 * function, and links against HCL's libnccl.so.2.
 *
 * Every function is assigned to a pointer of its exact type, so a signature
 * that differs from the one written here fails to compile (C++, and C with
 * -Werror=incompatible-pointer-types).
 */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#ifndef NCCL_API_USAGE_FN
#error "define NCCL_API_USAGE_FN"
#endif
#if defined(EXPECT_NVIDIA_HEADER) && defined(HCL_NCCL_HEADER)
#error "this build must use NVIDIA's nccl.h, not HCL's"
#endif
#if !defined(EXPECT_NVIDIA_HEADER) && !defined(HCL_NCCL_HEADER)
#error "this build must use HCL's nccl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif
int NCCL_API_USAGE_FN(void);
#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

typedef ncclResult_t (*MemAllocFn)(void**, size_t);
typedef ncclResult_t (*MemFreeFn)(void*);
typedef ncclResult_t (*GetVersionFn)(int*);
typedef ncclResult_t (*GetUniqueIdFn)(ncclUniqueId*);
typedef ncclResult_t (*InitRankConfigFn)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
typedef ncclResult_t (*InitRankFn)(ncclComm_t*, int, ncclUniqueId, int);
typedef ncclResult_t (*InitAllFn)(ncclComm_t*, int, const int*);
typedef ncclResult_t (*CommFn)(ncclComm_t);
typedef ncclResult_t (*RevokeFn)(ncclComm_t, int);
typedef ncclResult_t (*SplitFn)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);
typedef ncclResult_t (*ShrinkFn)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
typedef ncclResult_t (*InitScalableFn)(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*);
typedef const char* (*ErrorStringFn)(ncclResult_t);
typedef const char* (*LastErrorFn)(ncclComm_t);
typedef void (*ResetDebugInitFn)(void);
typedef ncclResult_t (*AsyncErrorFn)(ncclComm_t, ncclResult_t*);
typedef ncclResult_t (*CommIntFn)(const ncclComm_t, int*);
typedef ncclResult_t (*RegisterFn)(const ncclComm_t, void*, size_t, void**);
typedef ncclResult_t (*DeregisterFn)(const ncclComm_t, void*);
typedef ncclResult_t (*WindowRegisterFn)(ncclComm_t, void*, size_t, ncclWindow_t*, int);
typedef ncclResult_t (*WindowDeregisterFn)(ncclComm_t, ncclWindow_t);
typedef ncclResult_t (*PreMulSumFn)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t);
typedef ncclResult_t (*RedOpDestroyFn)(ncclRedOp_t, ncclComm_t);
typedef ncclResult_t (*ReduceFn)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                                 cudaStream_t);
typedef ncclResult_t (*BcastFn)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*RootedFn)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*ReducingFn)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                   cudaStream_t);
typedef ncclResult_t (*MovingFn)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*SendFn)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*RecvFn)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*GroupFn)(void);
typedef ncclResult_t (*SimulateFn)(ncclSimInfo_t*);

struct Entry {
  const char* name;
  int present;
};

#define USE(type, fn)                                                   \
  {                                                                     \
    type f_ = fn;                                                       \
    type pf_ = p##fn;                                                   \
    entries[n].name = #fn;                                              \
    entries[n++].present = f_ != NULL && pf_ != NULL;                   \
  }

#define EXPECT(cond)                                              \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "%s: %s is false\n", __FILE__, #cond);     \
      ++failures;                                                 \
    }                                                             \
  } while (0)

int NCCL_API_USAGE_FN(void) {
  struct Entry entries[64];
  int n = 0;
  int failures = 0;
  int i;

  USE(MemAllocFn, ncclMemAlloc);
  USE(MemFreeFn, ncclMemFree);
  USE(GetVersionFn, ncclGetVersion);
  USE(GetUniqueIdFn, ncclGetUniqueId);
  USE(InitRankConfigFn, ncclCommInitRankConfig);
  USE(InitRankFn, ncclCommInitRank);
  USE(InitAllFn, ncclCommInitAll);
  USE(CommFn, ncclCommFinalize);
  USE(CommFn, ncclCommDestroy);
  USE(CommFn, ncclCommAbort);
  USE(RevokeFn, ncclCommRevoke);
  USE(SplitFn, ncclCommSplit);
  USE(ShrinkFn, ncclCommShrink);
  USE(InitScalableFn, ncclCommInitRankScalable);
  USE(ErrorStringFn, ncclGetErrorString);
  USE(LastErrorFn, ncclGetLastError);
  USE(ResetDebugInitFn, ncclResetDebugInit);
  USE(AsyncErrorFn, ncclCommGetAsyncError);
  USE(CommIntFn, ncclCommCount);
  USE(CommIntFn, ncclCommCuDevice);
  USE(CommIntFn, ncclCommUserRank);
  USE(RegisterFn, ncclCommRegister);
  USE(DeregisterFn, ncclCommDeregister);
  USE(WindowRegisterFn, ncclCommWindowRegister);
  USE(WindowDeregisterFn, ncclCommWindowDeregister);
  USE(PreMulSumFn, ncclRedOpCreatePreMulSum);
  USE(RedOpDestroyFn, ncclRedOpDestroy);
  USE(ReduceFn, ncclReduce);
  USE(BcastFn, ncclBcast);
  USE(RootedFn, ncclBroadcast);
  USE(ReducingFn, ncclAllReduce);
  USE(ReducingFn, ncclReduceScatter);
  USE(MovingFn, ncclAllGather);
  USE(MovingFn, ncclAlltoAll);
  USE(RootedFn, ncclGather);
  USE(RootedFn, ncclScatter);
  USE(SendFn, ncclSend);
  USE(RecvFn, ncclRecv);
  USE(GroupFn, ncclGroupStart);
  USE(GroupFn, ncclGroupEnd);
  USE(SimulateFn, ncclGroupSimulateEnd);
  EXPECT(n == 41);
  for (i = 0; i < n; ++i) {
    if (!entries[i].present) {
      fprintf(stderr, "%s or p%s is missing\n", entries[i].name, entries[i].name);
      ++failures;
    }
  }

  {
    int version = 0;
    EXPECT(ncclGetVersion(&version) == ncclSuccess && version == NCCL_VERSION_CODE);
  }
  EXPECT(NCCL_MAJOR == 2 && NCCL_MINOR == 28 && NCCL_PATCH == 9);
  EXPECT(strcmp(NCCL_SUFFIX, "") == 0);
  EXPECT(NCCL_VERSION_CODE == 22809);
  EXPECT(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH) == NCCL_VERSION_CODE);
  EXPECT(NCCL_VERSION(2, 8, 4) == 2804);
  EXPECT(NCCL_VERSION(2, 9, 0) == 20900);
  EXPECT(NCCL_VERSION(3, 0, 1) == 30001);
  EXPECT(NCCL_COMM_NULL == NULL);
  EXPECT(NCCL_UNIQUE_ID_BYTES == 128 && sizeof(ncclUniqueId) == 128);
  EXPECT(NCCL_SPLIT_NOCOLOR == -1);
  EXPECT(NCCL_UNDEF_FLOAT == -1.0f);
  EXPECT(NCCL_WIN_DEFAULT == 0 && NCCL_WIN_COLL_SYMMETRIC == 1 && NCCL_WIN_REQUIRED_ALIGNMENT == 4096);
  EXPECT(NCCL_CTA_POLICY_DEFAULT == 0 && NCCL_CTA_POLICY_EFFICIENCY == 1 && NCCL_CTA_POLICY_ZERO == 2);
  EXPECT(NCCL_SHRINK_DEFAULT == 0 && NCCL_SHRINK_ABORT == 1 && NCCL_REVOKE_DEFAULT == 0);
  {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    EXPECT(config.size == sizeof(ncclConfig_t));
    EXPECT(config.magic == 0xcafebeef);
    EXPECT(config.version == NCCL_VERSION_CODE);
    EXPECT(config.blocking == NCCL_CONFIG_UNDEF_INT && config.nvlinkCentricSched == NCCL_CONFIG_UNDEF_INT);
    EXPECT(config.netName == NCCL_CONFIG_UNDEF_PTR && config.commName == NCCL_CONFIG_UNDEF_PTR);
    EXPECT(config.cgaClusterSize == NCCL_CONFIG_UNDEF_INT && config.minCTAs == NCCL_CONFIG_UNDEF_INT &&
           config.maxCTAs == NCCL_CONFIG_UNDEF_INT && config.splitShare == NCCL_CONFIG_UNDEF_INT &&
           config.trafficClass == NCCL_CONFIG_UNDEF_INT && config.collnetEnable == NCCL_CONFIG_UNDEF_INT &&
           config.CTAPolicy == NCCL_CONFIG_UNDEF_INT && config.shrinkShare == NCCL_CONFIG_UNDEF_INT &&
           config.nvlsCTAs == NCCL_CONFIG_UNDEF_INT && config.nChannelsPerNetPeer == NCCL_CONFIG_UNDEF_INT);
  }
  {
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    EXPECT(sim.size == sizeof(ncclSimInfo_t) && sim.magic == 0x74685283 && sim.version == NCCL_VERSION_CODE);
    EXPECT(sim.estimatedTime == NCCL_UNDEF_FLOAT);
  }
  EXPECT(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 && ncclInternalError == 3 &&
         ncclInvalidArgument == 4 && ncclInvalidUsage == 5 && ncclRemoteError == 6 && ncclInProgress == 7 &&
         ncclNumResults == 8);
  EXPECT(ncclInt8 == 0 && ncclChar == 0 && ncclUint8 == 1 && ncclInt32 == 2 && ncclInt == 2 && ncclUint32 == 3 &&
         ncclInt64 == 4 && ncclUint64 == 5 && ncclFloat16 == 6 && ncclHalf == 6 && ncclFloat32 == 7 &&
         ncclFloat == 7 && ncclFloat64 == 8 && ncclDouble == 8 && ncclBfloat16 == 9 && ncclFloat8e4m3 == 10 &&
         ncclFloat8e5m2 == 11 && ncclNumTypes == 12);
  EXPECT(ncclSum == 0 && ncclProd == 1 && ncclMax == 2 && ncclMin == 3 && ncclAvg == 4 && ncclNumOps == 5 &&
         ncclMaxRedOp == 0x7fffffff && sizeof(ncclRedOp_t) == sizeof(int) && ncclNumOps_dummy == 5);
  EXPECT(ncclScalarDevice == 0 && ncclScalarHostImmediate == 1);
  {
    cudaStream_t stream = NULL;
    ncclWindow_t window = NULL;
    ncclComm_t comm = NCCL_COMM_NULL;
    EXPECT(stream == NULL && window == NULL && comm == NULL);
  }
  return failures;
}
