/*
 * HCL: a heterogeneous collective communication library with the NCCL API.
 *
 * Every host function of NCCL 2.28 is here with the hcl prefix and the same
 * signature, enum values and struct layout. HCL extensions (CPU streams,
 * hclCommGetPlan, ...) are marked as such.
 */
#ifndef HCL_H_
#define HCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define HCL_MAJOR 0
#define HCL_MINOR 1
#define HCL_PATCH 0
#define HCL_VERSION_CODE (HCL_MAJOR * 10000 + HCL_MINOR * 100 + HCL_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hclComm* hclComm_t;
typedef struct hclWindow* hclWindow_t;
#define HCL_COMM_NULL NULL

/* A stream. NULL means "run now, return when complete" (after the
 * communicator's operations issued earlier on streams: a communicator runs
 * its operations in the order they were issued, as NCCL does). A CPU stream
 * from hclStreamCreate runs operations asynchronously and in order. A CUDA or
 * HIP stream handle may be passed where the matching device backend exists.
 * As a device runtime's stream does, a stream holds up to 1024 launches (a
 * call, or a group), queued or running; the call that would add one more
 * waits until one finishes. */
typedef struct hclStream* hclStream_t;

#define HCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[HCL_UNIQUE_ID_BYTES];
} hclUniqueId;

typedef enum {
  hclSuccess = 0,
  hclUnhandledCudaError = 1,
  hclSystemError = 2,
  hclInternalError = 3,
  hclInvalidArgument = 4,
  hclInvalidUsage = 5,
  hclRemoteError = 6,
  hclInProgress = 7,
  hclNumResults = 8
} hclResult_t;

#define HCL_CONFIG_UNDEF_INT INT_MIN
#define HCL_CONFIG_UNDEF_PTR NULL
#define HCL_SPLIT_NOCOLOR -1
#define HCL_UNDEF_FLOAT -1.0f

#define HCL_WIN_DEFAULT 0x00
#define HCL_WIN_COLL_SYMMETRIC 0x01
#define HCL_WIN_REQUIRED_ALIGNMENT 4096

#define HCL_CTA_POLICY_DEFAULT 0x00
#define HCL_CTA_POLICY_EFFICIENCY 0x01
#define HCL_CTA_POLICY_ZERO 0x02

#define HCL_SHRINK_DEFAULT 0x00
#define HCL_SHRINK_ABORT 0x01
#define HCL_REVOKE_DEFAULT 0x00

#define HCL_CONFIG_MAGIC 0xcafebeef
/* The NCCL version whose API and config layout HCL matches. */
#define HCL_NCCL_VERSION_CODE 22809

/* Same layout as ncclConfig_v22800. */
typedef struct hclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} hclConfig_t;

#define HCL_CONFIG_INITIALIZER                                                                  \
  {                                                                                             \
    sizeof(hclConfig_t), HCL_CONFIG_MAGIC, HCL_NCCL_VERSION_CODE, HCL_CONFIG_UNDEF_INT,         \
        HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_PTR, \
        HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_PTR, HCL_CONFIG_UNDEF_INT, \
        HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_INT, HCL_CONFIG_UNDEF_INT, \
        HCL_CONFIG_UNDEF_INT                                                                    \
  }

typedef struct hclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} hclSimInfo_t;

#define HCL_SIM_INFO_MAGIC 0x74685283
#define HCL_SIM_INFO_INITIALIZER \
  { sizeof(hclSimInfo_t), HCL_SIM_INFO_MAGIC, HCL_NCCL_VERSION_CODE, HCL_UNDEF_FLOAT }

typedef enum { hclNumOps_dummy = 5 } hclRedOp_dummy_t;
typedef enum {
  hclSum = 0,
  hclProd = 1,
  hclMax = 2,
  hclMin = 3,
  hclAvg = 4,
  hclNumOps = 5,
  hclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(hclRedOp_dummy_t))
} hclRedOp_t;

typedef enum {
  hclInt8 = 0,
  hclChar = 0,
  hclUint8 = 1,
  hclInt32 = 2,
  hclInt = 2,
  hclUint32 = 3,
  hclInt64 = 4,
  hclUint64 = 5,
  hclFloat16 = 6,
  hclHalf = 6,
  hclFloat32 = 7,
  hclFloat = 7,
  hclFloat64 = 8,
  hclDouble = 8,
  hclBfloat16 = 9,
  hclFloat8e4m3 = 10,
  hclFloat8e5m2 = 11,
  hclNumTypes = 12
} hclDataType_t;

typedef enum {
  /* The scalar is read through the pointer when the operation runs. */
  hclScalarDevice = 0,
  /* The scalar is read when hclRedOpCreatePreMulSum is called. */
  hclScalarHostImmediate = 1
} hclScalarResidence_t;

/* Memory */
hclResult_t hclMemAlloc(void** ptr, size_t size);
hclResult_t hclMemFree(void* ptr);

/* Lifecycle */
hclResult_t hclGetVersion(int* version);
hclResult_t hclGetUniqueId(hclUniqueId* uniqueId);
hclResult_t hclCommInitRankConfig(hclComm_t* comm, int nranks, hclUniqueId commId, int rank,
                                  hclConfig_t* config);
hclResult_t hclCommInitRank(hclComm_t* comm, int nranks, hclUniqueId commId, int rank);
hclResult_t hclCommInitAll(hclComm_t* comm, int ndev, const int* devlist);
hclResult_t hclCommInitRankScalable(hclComm_t* newcomm, int nranks, int myrank, int nId,
                                    hclUniqueId* commIds, hclConfig_t* config);
/* Afterwards new operations (collectives, send/receive, split,
 * registrations) return hclInvalidUsage; queries, deregistration and
 * hclCommDestroy still work. */
hclResult_t hclCommFinalize(hclComm_t comm);
hclResult_t hclCommDestroy(hclComm_t comm);
hclResult_t hclCommAbort(hclComm_t comm);
/* Stops this rank's operations in flight on comm (they return an error) and
 * returns once none runs. Afterwards new operations and hclCommFinalize
 * return hclInvalidUsage; hclCommDestroy, hclCommSplit and hclCommShrink
 * still work. revokeFlags must be HCL_REVOKE_DEFAULT. */
hclResult_t hclCommRevoke(hclComm_t comm, int revokeFlags);
hclResult_t hclCommSplit(hclComm_t comm, int color, int key, hclComm_t* newcomm,
                         hclConfig_t* config);
/* Called by the ranks that stay (all with the same list and flags, which
 * names at least one rank, as NCCL's): they form newcomm in parent order. HCL_SHRINK_DEFAULT runs over comm's links
 * and leaves comm usable; HCL_SHRINK_ABORT, or a comm that has failed, aborts
 * comm and meets at a bootstrap root of the first survivor instead. */
hclResult_t hclCommShrink(hclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                          hclComm_t* newcomm, hclConfig_t* config, int shrinkFlags);

/* Queries and errors */
const char* hclGetErrorString(hclResult_t result);
const char* hclGetLastError(hclComm_t comm);
void hclResetDebugInit(void);
hclResult_t hclCommGetAsyncError(hclComm_t comm, hclResult_t* asyncError);
hclResult_t hclCommCount(const hclComm_t comm, int* count);
hclResult_t hclCommCuDevice(const hclComm_t comm, int* device);
hclResult_t hclCommUserRank(const hclComm_t comm, int* rank);

/* Registration */
hclResult_t hclCommRegister(const hclComm_t comm, void* buff, size_t size, void** handle);
hclResult_t hclCommDeregister(const hclComm_t comm, void* handle);
/* Collective: every rank of comm registers a window with the same winFlags
 * (HCL_WIN_COLL_SYMMETRIC: and the same size), or the call fails on every
 * rank. Inside a group *win is filled at hclGroupEnd. Deregistration is
 * local; a communicator's windows go with it. */
hclResult_t hclCommWindowRegister(hclComm_t comm, void* buff, size_t size, hclWindow_t* win,
                                  int winFlags);
hclResult_t hclCommWindowDeregister(hclComm_t comm, hclWindow_t win);

/* Reduction operators */
hclResult_t hclRedOpCreatePreMulSum(hclRedOp_t* op, void* scalar, hclDataType_t datatype,
                                    hclScalarResidence_t residence, hclComm_t comm);
hclResult_t hclRedOpDestroy(hclRedOp_t op, hclComm_t comm);

/* Collectives */
hclResult_t hclReduce(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype,
                      hclRedOp_t op, int root, hclComm_t comm, hclStream_t stream);
hclResult_t hclBcast(void* buff, size_t count, hclDataType_t datatype, int root, hclComm_t comm,
                     hclStream_t stream);
hclResult_t hclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                         hclDataType_t datatype, int root, hclComm_t comm, hclStream_t stream);
hclResult_t hclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                         hclDataType_t datatype, hclRedOp_t op, hclComm_t comm,
                         hclStream_t stream);
hclResult_t hclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             hclDataType_t datatype, hclRedOp_t op, hclComm_t comm,
                             hclStream_t stream);
hclResult_t hclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                         hclDataType_t datatype, hclComm_t comm, hclStream_t stream);
hclResult_t hclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                        hclDataType_t datatype, hclComm_t comm, hclStream_t stream);
hclResult_t hclGather(const void* sendbuff, void* recvbuff, size_t count, hclDataType_t datatype,
                      int root, hclComm_t comm, hclStream_t stream);
hclResult_t hclScatter(const void* sendbuff, void* recvbuff, size_t count,
                       hclDataType_t datatype, int root, hclComm_t comm, hclStream_t stream);

/* Point to point */
hclResult_t hclSend(const void* sendbuff, size_t count, hclDataType_t datatype, int peer,
                    hclComm_t comm, hclStream_t stream);
hclResult_t hclRecv(void* recvbuff, size_t count, hclDataType_t datatype, int peer,
                    hclComm_t comm, hclStream_t stream);

/* Groups */
hclResult_t hclGroupStart(void);
hclResult_t hclGroupEnd(void);
/* Ends the group like hclGroupEnd, running its communicator creations but
 * none of its operations, and sets simInfo->estimatedTime to the cost
 * model's time for those operations in microseconds. */
hclResult_t hclGroupSimulateEnd(hclSimInfo_t* simInfo);

/* ---- HCL extensions ---- */

/* CPU streams: operations enqueued on one run asynchronously, in order. */
hclResult_t hclStreamCreate(hclStream_t* stream);
hclResult_t hclStreamSynchronize(hclStream_t stream);
/* hclSuccess when all work is complete, hclInProgress while some is pending,
 * or the error of the first failed operation (until hclStreamSynchronize
 * has returned it: it reports each error once). */
hclResult_t hclStreamQuery(hclStream_t stream);
hclResult_t hclStreamDestroy(hclStream_t stream);

/* Devices. A communicator computes on the device chosen when it is created:
 * the calling thread's hclSetDevice choice, else HCL_DEVICE, else "auto" (the
 * current CUDA device when a CUDA driver and device are present, then HIP,
 * then the CPU). Text: "auto", "cpu", "cuda", "cuda:N", "hip", "hip:N",
 * "sim", "sim:N" (sim is a stand-in GPU for tests). */
hclResult_t hclSetDevice(const char* device);
/* The device comm computes on, e.g. "cuda:0" or "cpu"; written like
 * hclCommDescribeLinks writes its text. */
hclResult_t hclCommGetDevice(hclComm_t comm, char* buf, size_t size);
/* Memory of comm's device (device memory on a GPU, host memory on the CPU),
 * and a blocking copy between any two of host memory and that memory. */
hclResult_t hclCommMemAlloc(hclComm_t comm, void** ptr, size_t size);
hclResult_t hclCommMemFree(hclComm_t comm, void* ptr);
hclResult_t hclCommMemcpy(hclComm_t comm, void* dst, const void* src, size_t size);
/* An HCL stream bound to a stream of comm's device runtime (a cudaStream_t or
 * hipStream_t; NULL is the runtime's default stream). An operation enqueued on
 * it starts after the work enqueued on the native stream before it, returns at
 * once, and holds back the work enqueued on the native stream after it, as
 * NCCL does. Destroy it with hclStreamDestroy, which waits for its work. It
 * may be used with every communicator on the same device. */
hclResult_t hclCommWrapStream(hclComm_t comm, void* nativeStream, hclStream_t* stream);

/* Describes, for each peer, the transport this rank uses and why. The text is
 * written to buf (always NUL-terminated when size > 0); *needed receives the
 * full length including the terminator. buf may be NULL with size 0 to ask
 * for the length alone; needed may be NULL. */
hclResult_t hclCommDescribeLinks(hclComm_t comm, char* buf, size_t size, size_t* needed);

/* The plan the link-cost model chose for one collective at one size, the
 * same on every rank (rank 0 computed it at init and sent it to the others).
 * collective: "allreduce", "broadcast", "reduce", "allgather",
 * "reducescatter", "alltoall", "gather" or "scatter" (any case); bytes: count
 * times the element size, with NCCL's meaning of count for that collective. */
typedef struct {
  char algorithm[32];      /* "ring", "tree", "rhd", "rd", "hier", ...; "ipc" where the ranks' devices map each other's memory */
  double estimatedUs;      /* the model's estimate; 0 when no table was built */
  char linkClasses[256];   /* link classes carrying its data: "shm,net:wan" */
  char candidates[1024];   /* the allowed algorithms priced, with their estimates */
  char groups[256];        /* group of each rank per level, innermost first: "0 0 1 1; 0 0 0 0"; where
                              that does not fit, runs of one group as group*count ("0*8 1*8; 0*16");
                              empty where even that does not fit */
} hclPlanInfo_t;
hclResult_t hclCommGetPlan(hclComm_t comm, const char* collective, size_t bytes, hclPlanInfo_t* info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HCL_H_ */
