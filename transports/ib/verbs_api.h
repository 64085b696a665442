// libibverbs, opened at run time (so one build runs where it is missing)
// and called through this table. The data path (post_send, post_recv,
// poll_cq) goes through the context's ops, as verbs.h's inline wrappers do.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace hcl::ib {

struct VerbsApi {
  std::string library;  // the file opened
  ibv_device** (*getDeviceList)(int* count) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* device) = nullptr;
  ibv_context* (*openDevice)(ibv_device* device) = nullptr;
  int (*closeDevice)(ibv_context* context) = nullptr;
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr) = nullptr;
  // The exported symbol, which fills the port attributes of every rdma-core.
  int (*queryPort)(ibv_context* context, uint8_t port, ibv_port_attr* attr) = nullptr;
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* context) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                      int vector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  const char* (*wcStatusText)(ibv_wc_status status) = nullptr;
  // Optional (rdma-core 32 and later): a GID with its type, where sysfs
  // may be missing (containers). Null where the library lacks it.
  int (*queryGidEx)(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t flags,
                    size_t entrySize) = nullptr;

  static int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) { return qp->context->ops.post_send(qp, wr, bad); }
  static int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) { return qp->context->ops.post_recv(qp, wr, bad); }
  static int pollCq(ibv_cq* cq, int n, ibv_wc* wc) { return cq->context->ops.poll_cq(cq, n, wc); }
};

// The library HCL_IBVERBS_LIBRARY names, else libibverbs.so.1; opened once
// per process and never closed. Null, with *why, where it cannot be used.
const VerbsApi* loadVerbs(const std::string& library, std::string* why);

}  // namespace hcl::ib
