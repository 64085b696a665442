// NCCL entry points: collectives, point to point, groups.
//
// On a CPU communicator buffers are checked to be host memory
// (memory_routing.h) and the call is complete when it returns; on a GPU
// communicator it is ordered on the cudaStream_t (stream_routing.h).
#include "plugins/nccl/abi.h"
#include "plugins/nccl/memory_routing.h"
#include "plugins/nccl/stream_routing.h"

using namespace hcl::nccl;

#define HCL_NCCL_STREAM(call, comm, stream, out) \
  hclStream_t out = nullptr;                      \
  if (ncclResult_t streamFailed = streamFor(call, comm, stream, &out)) return streamFailed

extern "C" {

ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclAllReduce", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclAllReduce", comm, stream, hstream);
  return toNccl(hclAllReduce(sendbuff, recvbuff, count, toHcl(datatype), toHcl(op), toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclAllReduce)

ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclReduce", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclReduce", comm, stream, hstream);
  return toNccl(
      hclReduce(sendbuff, recvbuff, count, toHcl(datatype), toHcl(op), root, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclReduce)

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclBcast", comm, {{"buff", buff}})) return r;
  HCL_NCCL_STREAM("ncclBcast", comm, stream, hstream);
  return toNccl(hclBcast(buff, count, toHcl(datatype), root, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclBcast)

ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclBroadcast", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclBroadcast", comm, stream, hstream);
  return toNccl(hclBroadcast(sendbuff, recvbuff, count, toHcl(datatype), root, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclBroadcast)

ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r =
          checkHostBuffers("ncclReduceScatter", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclReduceScatter", comm, stream, hstream);
  return toNccl(hclReduceScatter(sendbuff, recvbuff, recvcount, toHcl(datatype), toHcl(op), toHcl(comm),
                                 hstream));
}
HCL_NCCL_ALIAS(ncclReduceScatter)

ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclAllGather", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclAllGather", comm, stream, hstream);
  return toNccl(hclAllGather(sendbuff, recvbuff, sendcount, toHcl(datatype), toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclAllGather)

ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclAlltoAll", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclAlltoAll", comm, stream, hstream);
  return toNccl(hclAlltoAll(sendbuff, recvbuff, count, toHcl(datatype), toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclAlltoAll)

ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclGather", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclGather", comm, stream, hstream);
  return toNccl(hclGather(sendbuff, recvbuff, count, toHcl(datatype), root, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclGather)

ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclScatter", comm, {{"sendbuff", sendbuff}, {"recvbuff", recvbuff}})) {
    return r;
  }
  HCL_NCCL_STREAM("ncclScatter", comm, stream, hstream);
  return toNccl(hclScatter(sendbuff, recvbuff, count, toHcl(datatype), root, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclScatter)

ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclSend", comm, {{"sendbuff", sendbuff}})) return r;
  HCL_NCCL_STREAM("ncclSend", comm, stream, hstream);
  return toNccl(hclSend(sendbuff, count, toHcl(datatype), peer, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclSend)

ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  if (ncclResult_t r = checkHostBuffers("ncclRecv", comm, {{"recvbuff", recvbuff}})) return r;
  HCL_NCCL_STREAM("ncclRecv", comm, stream, hstream);
  return toNccl(hclRecv(recvbuff, count, toHcl(datatype), peer, toHcl(comm), hstream));
}
HCL_NCCL_ALIAS(ncclRecv)

ncclResult_t pncclGroupStart(void) { return toNccl(hclGroupStart()); }
HCL_NCCL_ALIAS(ncclGroupStart)

ncclResult_t pncclGroupEnd(void) { return toNccl(hclGroupEnd()); }
HCL_NCCL_ALIAS(ncclGroupEnd)

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  hclSimInfo_t info = HCL_SIM_INFO_INITIALIZER;
  if (simInfo) {
    info.magic = simInfo->magic;  // both libraries use one magic; a wrong one is refused
    info.estimatedTime = simInfo->estimatedTime;
  }
  const hclResult_t r = hclGroupSimulateEnd(simInfo ? &info : nullptr);
  if (r == hclSuccess && simInfo) simInfo->estimatedTime = info.estimatedTime;
  return toNccl(r);
}
HCL_NCCL_ALIAS(ncclGroupSimulateEnd)

}  // extern "C"
