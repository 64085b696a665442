// Smoke test of the fake libibverbs (fake_verbs.cc). It loads the library
// given as argv[1] with dlopen, as HCL does, and drives it through dlsym'd
// pointers and the inline data-path wrappers of verbs.h. It runs every check
// with the InfiniBand link layer, then re-executes itself with
// HCL_FAKE_VERBS_LINK_LAYER=eth for RoCE addressing. Sends complete only
// once the peer has matched them to a posted receive, as on a real HCA. The
// "fake verbs: ..."
// lines the library prints on the way come from misuse the test commits on
// purpose.
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

const char* g_mode = "ib";

[[noreturn, gnu::format(printf, 3, 4)]] void fail_check(int line, const char* cond, const char* fmt, ...) {
  fprintf(stderr, "fake verbs smoke (%s, pid %d): FAILED at line %d: %s: ", g_mode, static_cast<int>(getpid()),
          line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) fail_check(__LINE__, #cond, __VA_ARGS__); \
  } while (0)

// The entry points HCL resolves, with the signatures it calls them with.
struct Verbs {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  const char* (*get_device_name)(ibv_device*);
  __be64 (*get_device_guid)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  int (*fork_init)();
  const char* (*wc_status_str)(ibv_wc_status);
};

Verbs V;

template <class F>
void load(void* lib, F* f, const char* name) {
  *f = reinterpret_cast<F>(dlsym(lib, name));
  CHECK(*f, "dlsym(%s): %s", name, dlerror());
}

void load_verbs(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(lib, "dlopen(%s): %s", path, dlerror());
  load(lib, &V.get_device_list, "ibv_get_device_list");
  load(lib, &V.free_device_list, "ibv_free_device_list");
  load(lib, &V.get_device_name, "ibv_get_device_name");
  load(lib, &V.get_device_guid, "ibv_get_device_guid");
  load(lib, &V.open_device, "ibv_open_device");
  load(lib, &V.close_device, "ibv_close_device");
  load(lib, &V.query_device, "ibv_query_device");
  load(lib, &V.query_port, "ibv_query_port");
  load(lib, &V.query_gid, "ibv_query_gid");
  load(lib, &V.alloc_pd, "ibv_alloc_pd");
  load(lib, &V.dealloc_pd, "ibv_dealloc_pd");
  load(lib, &V.reg_mr, "ibv_reg_mr");
  load(lib, &V.dereg_mr, "ibv_dereg_mr");
  load(lib, &V.create_cq, "ibv_create_cq");
  load(lib, &V.destroy_cq, "ibv_destroy_cq");
  load(lib, &V.create_qp, "ibv_create_qp");
  load(lib, &V.modify_qp, "ibv_modify_qp");
  load(lib, &V.destroy_qp, "ibv_destroy_qp");
  load(lib, &V.fork_init, "ibv_fork_init");
  load(lib, &V.wc_status_str, "ibv_wc_status_str");
}

bool is_eth() { return strcmp(g_mode, "eth") == 0; }

// ---------------------------------------------------------------- endpoints

constexpr size_t kSizes[] = {0, 1, 4096, (1u << 20) + 3};
constexpr int kMessages = 4;
constexpr size_t kSlot = (1u << 20) + 4096;
constexpr size_t kBufSize = kMessages * kSlot;

struct Address {
  uint16_t lid;
  ibv_gid gid[2];
  uint32_t qpn;
};

// A device context with one RC QP, its CQs and two registered buffers.
struct Endpoint {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* scq = nullptr;
  ibv_cq* rcq = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<char> sbuf, rbuf;
  ibv_mr* smr = nullptr;  // no LOCAL_WRITE: fine for sends, refused for receives
  ibv_mr* rmr = nullptr;
  std::vector<ibv_wc> sent, received;  // polled, not yet checked
};

ibv_context* open_first_device() {
  int n = 0;
  ibv_device** list = V.get_device_list(&n);
  CHECK(list && n >= 1, "no device");
  ibv_context* ctx = V.open_device(list[0]);
  CHECK(ctx, "ibv_open_device: %s", strerror(errno));
  V.free_device_list(list);
  return ctx;
}

void open_endpoint(Endpoint* ep, uint32_t max_wr = 16, int send_cqe = 64) {
  ep->ctx = open_first_device();
  ep->pd = V.alloc_pd(ep->ctx);
  ep->scq = V.create_cq(ep->ctx, send_cqe, nullptr, nullptr, 0);
  ep->rcq = V.create_cq(ep->ctx, 64, nullptr, nullptr, 0);
  CHECK(ep->pd && ep->scq && ep->rcq, "alloc_pd / create_cq: %s", strerror(errno));
  ibv_qp_init_attr init{};
  init.send_cq = ep->scq;
  init.recv_cq = ep->rcq;
  init.cap = ibv_qp_cap{max_wr, max_wr, 2, 2, 64};
  init.qp_type = IBV_QPT_RC;
  ep->qp = V.create_qp(ep->pd, &init);
  CHECK(ep->qp, "ibv_create_qp: %s", strerror(errno));
  ep->sbuf.assign(kBufSize, 0);
  ep->rbuf.assign(kBufSize, 0);
  ep->smr = V.reg_mr(ep->pd, ep->sbuf.data(), kBufSize, 0);
  ep->rmr = V.reg_mr(ep->pd, ep->rbuf.data(), kBufSize, IBV_ACCESS_LOCAL_WRITE);
  CHECK(ep->smr && ep->rmr, "ibv_reg_mr: %s", strerror(errno));
}

void close_endpoint(Endpoint* ep) {
  CHECK(!ep->qp || V.destroy_qp(ep->qp) == 0, "ibv_destroy_qp");
  CHECK(V.destroy_cq(ep->scq) == 0 && V.destroy_cq(ep->rcq) == 0, "ibv_destroy_cq");
  CHECK(V.dereg_mr(ep->smr) == 0 && V.dereg_mr(ep->rmr) == 0, "ibv_dereg_mr");
  CHECK(V.dealloc_pd(ep->pd) == 0, "ibv_dealloc_pd");
  CHECK(V.close_device(ep->ctx) == 0, "ibv_close_device");
}

Address address_of(const Endpoint& ep) {
  Address a{};
  ibv_port_attr port{};
  CHECK(V.query_port(ep.ctx, 1, &port) == 0, "ibv_query_port");
  a.lid = port.lid;
  for (int i = 0; i < 2; ++i) CHECK(V.query_gid(ep.ctx, 1, i, &a.gid[i]) == 0, "ibv_query_gid %d", i);
  a.qpn = ep.qp->qp_num;
  return a;
}

uint32_t psn_of(uint32_t qpn) { return (qpn * 7919) & 0xffffff; }

ibv_ah_attr av_to(const Address& remote, int gid_index) {
  ibv_ah_attr ah{};
  ah.port_num = 1;
  if (is_eth()) {
    ah.is_global = 1;
    ah.grh.dgid = remote.gid[gid_index];
    ah.grh.sgid_index = static_cast<uint8_t>(gid_index);
    ah.grh.hop_limit = 1;
  } else {
    ah.dlid = remote.lid;
  }
  return ah;
}

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC;

ibv_qp_attr init_attr() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  return a;
}

ibv_qp_attr rtr_attr(const Address& remote, int gid_index) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = psn_of(remote.qpn);
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr = av_to(remote, gid_index);
  return a;
}

ibv_qp_attr rts_attr(const Endpoint& ep) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = psn_of(ep.qp->qp_num);
  a.max_rd_atomic = 1;
  return a;
}

// Up to RTR only: the QP receives (and acknowledges) but cannot send.
void connect_qp_rtr(Endpoint* ep, const Address& remote, int gid_index) {
  ibv_qp_attr a = init_attr();
  CHECK(V.modify_qp(ep->qp, &a, kInitMask) == 0, "RESET->INIT");
  a = rtr_attr(remote, gid_index);
  CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == 0, "INIT->RTR");
}

void connect_qp(Endpoint* ep, const Address& remote, int gid_index) {
  connect_qp_rtr(ep, remote, gid_index);
  ibv_qp_attr a = rts_attr(*ep);
  CHECK(V.modify_qp(ep->qp, &a, kRtsMask) == 0, "RTR->RTS");
}

// ---------------------------------------------------------------- data path

int post_send(Endpoint* ep, size_t offset, size_t len, uint64_t wr_id, uint32_t imm, bool signaled = true,
              uint32_t lkey_delta = 0, char* addr = nullptr, ibv_wr_opcode opcode = IBV_WR_SEND_WITH_IMM) {
  ibv_sge sge{reinterpret_cast<uint64_t>(addr ? addr : ep->sbuf.data() + offset), static_cast<uint32_t>(len),
              ep->smr->lkey + lkey_delta};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = len ? 1 : 0;
  wr.opcode = opcode;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.imm_data = htonl(imm);
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(ep->qp, &wr, &bad);
  CHECK((rc == 0) == (bad == nullptr) && (rc == 0 || bad == &wr), "bad_wr %p for rc %d", (void*)bad, rc);
  return rc;
}

int post_recv(Endpoint* ep, size_t offset, size_t len, uint64_t wr_id, ibv_mr* mr = nullptr) {
  mr = mr ? mr : ep->rmr;
  ibv_sge sge{reinterpret_cast<uint64_t>(static_cast<char*>(mr->addr) + offset), static_cast<uint32_t>(len),
              mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(ep->qp, &wr, &bad);
  CHECK((rc == 0) == (bad == nullptr), "bad_wr %p for rc %d", (void*)bad, rc);
  return rc;
}

void poll_into(ibv_cq* cq, std::vector<ibv_wc>* out) {
  ibv_wc wc[16];
  const int n = ibv_poll_cq(cq, 16, wc);
  CHECK(n >= 0, "ibv_poll_cq returned %d", n);
  out->insert(out->end(), wc, wc + n);
}

using Pump = std::vector<Endpoint*>;

void wait_for(const Pump& pump, const std::function<bool()>& done, double seconds, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    CHECK(std::chrono::steady_clock::now() < deadline, "timed out after %.1f s waiting for %s", seconds, what);
    for (Endpoint* ep : pump) {
      poll_into(ep->scq, &ep->sent);
      poll_into(ep->rcq, &ep->received);
    }
  }
}

// Polls all CQs of the pump for a while (the fake progresses inside polls).
void pump_for(const Pump& pump, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  wait_for(pump, [&] { return std::chrono::steady_clock::now() > until; }, 5 + ms / 1000.0, "a pause");
}

void check_send_wc(const ibv_wc& wc, uint64_t wr_id, ibv_wc_status status) {
  CHECK(wc.wr_id == wr_id && wc.status == status && (status != IBV_WC_SUCCESS || wc.opcode == IBV_WC_SEND),
        "send completion: wr_id %llu (want %llu), %s (want %s), opcode %d", (unsigned long long)wc.wr_id,
        (unsigned long long)wr_id, V.wc_status_str(wc.status), V.wc_status_str(status), wc.opcode);
}

char pattern(size_t j, int seed) { return static_cast<char>((j ^ (j >> 9)) * 7 + seed * 13); }

uint32_t imm_of(int seed, int i) { return 0xabc00000u + static_cast<uint32_t>(seed * 16 + i); }

void post_message_receives(Endpoint* ep) {
  for (int i = 0; i < kMessages; ++i) CHECK(post_recv(ep, i * kSlot, kSlot, 100 + i) == 0, "post_recv %d", i);
}

void post_message_sends(Endpoint* ep, int seed) {
  for (int i = 0; i < kMessages; ++i) {
    char* p = ep->sbuf.data() + i * kSlot;
    for (size_t j = 0; j < kSizes[i]; ++j) p[j] = pattern(j, seed + i);
    CHECK(post_send(ep, i * kSlot, kSizes[i], 200 + i, imm_of(seed, i)) == 0, "post_send %d", i);
  }
}

void check_message_receives(Endpoint* ep, const Pump& pump, int seed) {
  wait_for(pump, [&] { return ep->received.size() >= kMessages; }, 10, "4 messages");
  for (int i = 0; i < kMessages; ++i) {
    const ibv_wc& wc = ep->received[i];
    CHECK(wc.status == IBV_WC_SUCCESS, "message %d: %s", i, V.wc_status_str(wc.status));
    CHECK(wc.wr_id == 100u + i && wc.opcode == IBV_WC_RECV && wc.byte_len == kSizes[i],
          "message %d: wr_id %llu opcode %d byte_len %u", i, (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len);
    CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == imm_of(seed, i), "message %d: imm 0x%x", i,
          ntohl(wc.imm_data));
    CHECK(wc.qp_num == ep->qp->qp_num, "message %d: qp_num", i);
    const char* p = ep->rbuf.data() + i * kSlot;
    for (size_t j = 0; j < kSizes[i]; ++j) CHECK(p[j] == pattern(j, seed + i), "message %d byte %zu differs", i, j);
  }
  ep->received.erase(ep->received.begin(), ep->received.begin() + kMessages);
}

void check_sends(Endpoint* ep, const Pump& pump, int n, uint64_t first_wr_id) {
  wait_for(pump, [&] { return ep->sent.size() >= static_cast<size_t>(n); }, 10, "send completions");
  for (int i = 0; i < n; ++i) {
    const ibv_wc& wc = ep->sent[i];
    CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == first_wr_id + i,
          "send %d: %s, opcode %d, wr_id %llu", i, V.wc_status_str(wc.status), wc.opcode,
          (unsigned long long)wc.wr_id);
  }
  ep->sent.erase(ep->sent.begin(), ep->sent.begin() + n);
}

// ---------------------------------------------------------------- checks

void check_devices() {
  int n = -1;
  ibv_device** list = V.get_device_list(&n);
  CHECK(list && n == 2 && list[2] == nullptr, "expected 2 devices, got %d", n);
  CHECK(strcmp(V.get_device_name(list[0]), "fakeib0") == 0 && strcmp(V.get_device_name(list[1]), "fakeib1") == 0,
        "device names");
  CHECK(V.get_device_guid(list[0]) && V.get_device_guid(list[0]) != V.get_device_guid(list[1]), "guids");

  ibv_context* ctx = V.open_device(list[0]);
  CHECK(ctx, "open fakeib0");
  ibv_device_attr dev{};
  CHECK(V.query_device(ctx, &dev) == 0, "ibv_query_device");
  CHECK(dev.phys_port_cnt == 1 && dev.max_qp_wr == 1024 && dev.max_sge == 4 && dev.max_cqe == 4096 &&
            dev.max_qp == 4096 && strcmp(dev.fw_ver, "fake") == 0 && dev.node_guid == V.get_device_guid(list[0]),
        "device attrs");

  ibv_port_attr port{};
  CHECK(V.query_port(ctx, 1, &port) == 0, "ibv_query_port");
  const uint8_t ll = is_eth() ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  CHECK(port.state == IBV_PORT_ACTIVE && port.active_mtu == IBV_MTU_4096 && port.max_mtu == IBV_MTU_4096 &&
            port.active_speed == 32 && port.active_width == 2 && port.gid_tbl_len == 3 && port.pkey_tbl_len == 1 &&
            port.max_msg_sz == (1u << 30) && port.link_layer == ll,
        "port attrs");
  CHECK(is_eth() ? port.lid == 0 : port.lid >= 1 && port.lid <= 0xBFFF, "lid %u", port.lid);
  CHECK(V.query_port(ctx, 2, &port) != 0, "port 2 must not exist");

  ibv_gid gid[2];
  for (int i = 0; i < 2; ++i) CHECK(V.query_gid(ctx, 1, i, &gid[i]) == 0, "gid %d", i);
  CHECK(gid[0].raw[0] == 0xfe && gid[0].raw[1] == 0x80, "gid 0 is link-local");
  if (is_eth())
    CHECK(gid[1].raw[10] == 0xff && gid[1].raw[11] == 0xff && gid[1].raw[12] == 127, "gid 1 is ::ffff:127.0.x.y");
  else
    CHECK(gid[1].raw[0] == 0xfe && gid[1].raw[1] == 0xc0, "gid 1 is fec0::");
  CHECK(V.query_gid(ctx, 1, 3, &gid[0]) == EINVAL, "gid index 3 must be refused");

  ibv_context* down = V.open_device(list[1]);
  CHECK(down && V.query_port(down, 1, &port) == 0 && port.state == IBV_PORT_DOWN, "fakeib1 is down");
  CHECK(V.close_device(down) == 0 && V.close_device(ctx) == 0, "close");
  V.free_device_list(list);
}

void check_bad_modify(Endpoint* ep, const Address& remote) {
  ibv_qp_attr a = init_attr();
  CHECK(V.modify_qp(ep->qp, &a, kInitMask & ~IBV_QP_PORT) == EINVAL, "RESET->INIT without IBV_QP_PORT");
  CHECK(V.modify_qp(ep->qp, &a, kInitMask | IBV_QP_AV) == EINVAL, "RESET->INIT with IBV_QP_AV");
  a.port_num = 2;
  CHECK(V.modify_qp(ep->qp, &a, kInitMask) == EINVAL, "port_num 2");
  a = rtr_attr(remote, 1);
  CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == EINVAL, "RESET->RTR");
  CHECK(post_send(ep, 0, 8, 1, 0) == EINVAL, "post_send in RESET");
  CHECK(post_recv(ep, 0, 8, 1) == EINVAL, "post_recv in RESET");

  a = init_attr();
  CHECK(V.modify_qp(ep->qp, &a, kInitMask) == 0, "RESET->INIT");
  a = rtr_attr(remote, 1);
  CHECK(V.modify_qp(ep->qp, &a, kRtrMask & ~IBV_QP_MIN_RNR_TIMER) == EINVAL, "INIT->RTR without MIN_RNR_TIMER");
  a.path_mtu = static_cast<ibv_mtu>(6);
  CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == EINVAL, "path_mtu 6");
  a = rtr_attr(remote, 1);
  if (is_eth()) {
    a.ah_attr.is_global = 0;
    CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == EINVAL, "RoCE without is_global");
    a = rtr_attr(remote, 1);
    a.ah_attr.grh.sgid_index = 3;
    CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == EINVAL, "sgid_index 3");
    a = rtr_attr(remote, 1);
    a.ah_attr.grh.dgid.raw[3] ^= 1;
    CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == EINVAL, "foreign dgid");
  } else {
    a.ah_attr.dlid = 0;
    CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == EINVAL, "dlid 0");
  }
  a = rtr_attr(remote, 1);
  CHECK(V.modify_qp(ep->qp, &a, kRtrMask) == 0, "INIT->RTR");
  a = rts_attr(*ep);
  a.retry_cnt = 8;
  CHECK(V.modify_qp(ep->qp, &a, kRtsMask) == EINVAL, "retry_cnt 8");
  a = rts_attr(*ep);
  CHECK(V.modify_qp(ep->qp, &a, kRtsMask & ~IBV_QP_SQ_PSN) == EINVAL, "RTR->RTS without SQ_PSN");
  CHECK(V.modify_qp(ep->qp, &a, kRtsMask) == 0, "RTR->RTS");
}

void check_bad_work_requests(Endpoint* ep) {
  std::vector<char> unregistered(64);
  CHECK(post_send(ep, 0, 8, 1, 0, true, 0, unregistered.data()) == EINVAL, "send from unregistered memory");
  CHECK(post_send(ep, 0, 8, 1, 0, true, 12345) == EINVAL, "send with a wrong lkey");
  CHECK(post_send(ep, kBufSize - 4, 8, 1, 0) == EINVAL, "send past the end of the MR");
  CHECK(post_send(ep, 0, 8, 1, 0, true, 0, nullptr, IBV_WR_RDMA_WRITE) == EINVAL, "RDMA write");
  CHECK(post_recv(ep, 0, 8, 1, ep->smr) == EINVAL, "receive into an MR without LOCAL_WRITE");
  ibv_recv_wr wr{};
  ibv_sge sges[3] = {};
  wr.sg_list = sges;
  wr.num_sge = 3;  // max_recv_sge is 2
  ibv_recv_wr* bad = nullptr;
  CHECK(ibv_post_recv(ep->qp, &wr, &bad) == EINVAL && bad == &wr, "num_sge 3 > max_recv_sge 2");
}

void check_busy(Endpoint* ep) {
  CHECK(V.destroy_cq(ep->scq) == EBUSY, "destroy_cq with a QP on it");
  CHECK(V.dealloc_pd(ep->pd) == EBUSY, "dealloc_pd with a QP and MRs");
  CHECK(V.close_device(ep->ctx) == EBUSY, "close_device with a PD");
}

void check_messages_both_ways(Endpoint* a, Endpoint* b) {
  const Pump pump{a, b};
  post_message_receives(b);
  post_message_sends(a, 1);
  check_message_receives(b, pump, 1);
  check_sends(a, pump, kMessages, 200);
  post_message_receives(a);
  post_message_sends(b, 2);
  check_message_receives(a, pump, 2);
  check_sends(b, pump, kMessages, 200);
}

// A send completes only once the peer has a receive for it (RNR otherwise),
// message by message, zero-length ones too.
void check_send_before_receive(Endpoint* a, Endpoint* b) {
  const Pump pump{a, b};
  memset(a->sbuf.data(), 0x5a, 100);
  CHECK(post_send(a, 0, 100, 300, 7) == 0, "post_send");
  CHECK(post_send(a, 0, 0, 302, 8) == 0, "post_send of 0 bytes");
  pump_for(pump, 100);
  CHECK(b->received.empty(), "a message arrived with no receive posted");
  CHECK(a->sent.empty(), "a send completed (%s, wr_id %llu) before the peer posted a receive",
        V.wc_status_str(a->sent[0].status), (unsigned long long)a->sent[0].wr_id);
  CHECK(post_recv(b, 0, 4096, 301) == 0, "post_recv");
  wait_for(pump, [&] { return !b->received.empty() && !a->sent.empty(); }, 5, "the early message and its send");
  const ibv_wc wc = b->received[0];
  CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 301 && wc.byte_len == 100 && ntohl(wc.imm_data) == 7 &&
            b->rbuf[0] == 0x5a && b->rbuf[99] == 0x5a,
        "early message: %s, %u bytes", V.wc_status_str(wc.status), wc.byte_len);
  b->received.clear();
  check_sends(a, pump, 1, 300);
  pump_for(pump, 50);
  CHECK(a->sent.empty() && b->received.empty(), "the zero-length send completed with no receive for it");
  CHECK(post_recv(b, 4096, 64, 303) == 0, "post_recv");
  wait_for(pump, [&] { return !b->received.empty(); }, 5, "the zero-length message");
  CHECK(b->received[0].status == IBV_WC_SUCCESS && b->received[0].wr_id == 303 && b->received[0].byte_len == 0,
        "zero-length message: %s, %u bytes", V.wc_status_str(b->received[0].status), b->received[0].byte_len);
  b->received.clear();
  check_sends(a, pump, 1, 302);
}

// Acknowledgements do not wait behind the peer's own messages that have no
// receive posted (RNR applies to messages, not to ACKs).
void check_acks_not_blocked_by_rnr(Endpoint* a, Endpoint* b) {
  const Pump pump{a, b};
  CHECK(post_send(b, 0, 64, 1100, 0) == 0, "post_send b->a (a has no receive)");
  CHECK(post_recv(b, 0, 64, 1101) == 0, "post_recv");
  CHECK(post_send(a, 0, 64, 1102, 0) == 0, "post_send a->b");
  wait_for(pump, [&] { return !a->sent.empty() && !b->received.empty(); }, 5, "a's send and its message");
  check_send_wc(a->sent[0], 1102, IBV_WC_SUCCESS);
  CHECK(b->received[0].status == IBV_WC_SUCCESS && b->received[0].wr_id == 1101, "got %s",
        V.wc_status_str(b->received[0].status));
  a->sent.clear();
  b->received.clear();
  CHECK(b->sent.empty(), "b's send completed with no receive posted at a");
  CHECK(post_recv(a, 0, 64, 1103) == 0, "post_recv");
  wait_for(pump, [&] { return !b->sent.empty() && !a->received.empty(); }, 5, "b's send and its message");
  check_send_wc(b->sent[0], 1100, IBV_WC_SUCCESS);
  CHECK(a->received[0].status == IBV_WC_SUCCESS && a->received[0].wr_id == 1103, "got %s",
        V.wc_status_str(a->received[0].status));
  b->sent.clear();
  a->received.clear();
}

// A responder QP only in RTR acknowledges; when it is destroyed, the sends
// it never took fail: the first with RETRY_EXC_ERR, the rest flushed.
void check_rtr_responder(Endpoint* r, Endpoint* s) {
  const Pump pump{r, s};
  CHECK(post_send(s, 0, 64, 1200, 0) == 0, "post_send");
  pump_for(pump, 100);
  CHECK(s->sent.empty(), "a send to an RTR QP completed before it posted a receive");
  CHECK(post_recv(r, 0, 64, 1201) == 0, "post_recv in RTR");
  wait_for(pump, [&] { return !s->sent.empty() && !r->received.empty(); }, 5, "the send to the RTR QP");
  check_send_wc(s->sent[0], 1200, IBV_WC_SUCCESS);
  CHECK(r->received[0].status == IBV_WC_SUCCESS && r->received[0].wr_id == 1201, "got %s",
        V.wc_status_str(r->received[0].status));
  s->sent.clear();
  r->received.clear();

  CHECK(post_send(s, 0, 64, 1210, 0) == 0, "post_send");
  CHECK(post_send(s, 0, 64, 1211, 0, false) == 0, "post_send unsignaled");
  pump_for(pump, 50);
  CHECK(s->sent.empty(), "sends completed with no receive posted");
  CHECK(V.destroy_qp(r->qp) == 0, "ibv_destroy_qp");
  r->qp = nullptr;
  const Pump sender{s};
  wait_for(sender, [&] { return s->sent.size() >= 2; }, 5, "the failed sends");
  check_send_wc(s->sent[0], 1210, IBV_WC_RETRY_EXC_ERR);
  check_send_wc(s->sent[1], 1211, IBV_WC_WR_FLUSH_ERR);
  s->sent.clear();
}

// A QP aimed at a QP that is connected to another one fails its sends.
void check_wrong_destination(Endpoint* b) {
  Endpoint x;
  open_endpoint(&x);
  connect_qp(&x, address_of(*b), 1);
  const Pump pump{&x, b};
  bool failed = false;
  for (int i = 0; i < 3 && !failed; ++i) {
    CHECK(post_send(&x, 0, 8, 1000 + i, 0) == 0, "post_send");
    wait_for(pump, [&] { return !x.sent.empty(); }, 5, "a send completion");
    failed = x.sent[0].status != IBV_WC_SUCCESS;
    x.sent.clear();
  }
  CHECK(failed, "sends to a QP connected to another QP kept succeeding");
  CHECK(b->received.empty(), "a message from the wrong QP was received");
  close_endpoint(&x);
}

void check_outstanding_dereg(Endpoint* b) {
  CHECK(post_recv(b, 0, 64, 400) == 0, "post_recv");
  CHECK(V.dereg_mr(b->rmr) == EBUSY, "dereg_mr of an MR with an outstanding receive");
}

// Unsignaled sends hold their slots until a later signaled one is polled.
// Unacknowledged sends, unsignaled ones too, hold their slots.
void check_unsignaled_slots(Endpoint* a, Endpoint* b) {
  const Pump pump{a, b};
  for (int i = 0; i < 3; ++i) CHECK(post_send(a, 0, 8, 600 + i, 0, false) == 0, "unsignaled send %d", i);
  CHECK(post_send(a, 0, 8, 603, 0, true) == 0, "signaled send");
  CHECK(post_send(a, 0, 8, 604, 0, true) == ENOMEM, "a fifth send with max_send_wr 4");
  pump_for(pump, 100);
  CHECK(a->sent.empty(), "a send completed before the peer posted receives");
  CHECK(post_send(a, 0, 8, 604, 0, true) == ENOMEM, "a fifth send with 4 unacknowledged");
  for (int i = 0; i < 8; ++i) CHECK(post_recv(b, i * 64, 64, 500 + i) == 0, "post_recv");
  check_sends(a, pump, 1, 603);
  for (int i = 0; i < 4; ++i) CHECK(post_send(a, 0, 8, 605 + i, 0, i == 3) == 0, "send after the slots freed");
  check_sends(a, pump, 1, 608);
  wait_for(pump, [&] { return b->received.size() >= 8; }, 5, "8 small messages");
  for (const ibv_wc& wc : b->received) CHECK(wc.status == IBV_WC_SUCCESS, "small message");
  b->received.clear();
}

void check_too_small_receive(Endpoint* a, Endpoint* b) {
  const Pump pump{a, b};
  CHECK(post_recv(b, 0, 100, 700) == 0, "post_recv");
  CHECK(post_send(a, 0, 200, 701, 0) == 0, "post_send");
  wait_for(pump, [&] { return !b->received.empty() && !a->sent.empty(); }, 5, "the too-long message");
  CHECK(b->received[0].status == IBV_WC_LOC_LEN_ERR && b->received[0].wr_id == 700, "got %s",
        V.wc_status_str(b->received[0].status));
  check_send_wc(a->sent[0], 701, IBV_WC_REM_INV_REQ_ERR);
  CHECK(post_recv(b, 0, 100, 702) == 0, "post_recv in ERR");
  wait_for(pump, [&] { return b->received.size() >= 2; }, 5, "a flushed receive");
  CHECK(b->received[1].status == IBV_WC_WR_FLUSH_ERR && b->received[1].wr_id == 702, "got %s",
        V.wc_status_str(b->received[1].status));
  // The receiver went to ERR and dropped its streams: the sender's next send fails.
  CHECK(post_send(a, 0, 8, 703, 0) == 0, "post_send");
  wait_for(pump, [&] { return a->sent.size() >= 2 && a->sent.back().wr_id == 703; }, 5, "a failed send");
  CHECK(a->sent.size() == 2, "%zu send completions", a->sent.size());
  check_send_wc(a->sent[1], 703, IBV_WC_WR_FLUSH_ERR);  // the NAK moved the sender to ERR too
  a->sent.clear();
}

void check_cq_overflow(Endpoint* a, Endpoint* b) {
  for (int i = 0; i < 3; ++i) CHECK(post_recv(b, i * 64, 64, 800 + i) == 0, "post_recv");
  for (int i = 0; i < 3; ++i) CHECK(post_send(a, 0, 8, 810 + i, 0) == 0, "post_send %d", i);
  // Let the three sends be acknowledged while only the receiver's CQ is polled.
  const Pump receiver{b};
  wait_for(receiver, [&] { return b->received.size() >= 3; }, 5, "3 messages");
  pump_for(receiver, 50);
  int polled = 0, rc = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (rc >= 0 && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc[4];
    rc = ibv_poll_cq(a->scq, 4, wc);
    polled += rc > 0 ? rc : 0;
  }
  CHECK(rc < 0 && polled == 2, "a CQ of 2 with 3 completions: polled %d, then %d", polled, rc);
}

void run_in_process_checks() {
  check_devices();
  Endpoint a, b;
  open_endpoint(&a);
  open_endpoint(&b);
  check_bad_modify(&a, address_of(b));
  connect_qp(&b, address_of(a), 1);
  check_bad_work_requests(&a);
  check_busy(&a);
  check_messages_both_ways(&a, &b);
  check_send_before_receive(&a, &b);
  check_acks_not_blocked_by_rnr(&a, &b);
  check_wrong_destination(&b);
  check_outstanding_dereg(&b);
  close_endpoint(&a);
  close_endpoint(&b);

  Endpoint c, d;
  open_endpoint(&c, 4);
  open_endpoint(&d);
  connect_qp(&c, address_of(d), 0);
  connect_qp(&d, address_of(c), 0);
  check_unsignaled_slots(&c, &d);
  check_too_small_receive(&c, &d);
  close_endpoint(&c);
  close_endpoint(&d);

  Endpoint e, f;
  open_endpoint(&e, 16, 2);
  open_endpoint(&f);
  connect_qp(&e, address_of(f), 1);
  connect_qp(&f, address_of(e), 1);
  check_cq_overflow(&e, &f);
  close_endpoint(&e);
  close_endpoint(&f);

  Endpoint r, s;
  open_endpoint(&r);
  open_endpoint(&s);
  connect_qp_rtr(&r, address_of(s), 0);
  connect_qp(&s, address_of(r), 1);
  check_rtr_responder(&r, &s);
  close_endpoint(&r);
  close_endpoint(&s);
}

// ---------------------------------------------------------------- across fork

void write_all(int fd, const void* p, size_t n) { CHECK(write(fd, p, n) == static_cast<ssize_t>(n), "write"); }

void read_all(int fd, void* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(fd, static_cast<char*>(p) + got, n - got);
    CHECK(r > 0, "read from the other process");
    got += static_cast<size_t>(r);
  }
}

// Both processes: connect to the other over the fake, exchange messages.
void connected_pair_side(Endpoint* ep, int sock, bool parent) {
  open_endpoint(ep);
  const Address mine = address_of(*ep);
  Address theirs;
  write_all(sock, &mine, sizeof mine);
  read_all(sock, &theirs, sizeof theirs);
  connect_qp(ep, theirs, 0);
  post_message_receives(ep);
  const Pump pump{ep};
  if (parent) {
    post_message_sends(ep, 3);
    check_sends(ep, pump, kMessages, 200);
    check_message_receives(ep, pump, 4);
  } else {
    check_message_receives(ep, pump, 3);
    post_message_sends(ep, 4);
    check_sends(ep, pump, kMessages, 200);
  }
}

void run_fork_checks() {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
  const pid_t child = fork();
  CHECK(child >= 0, "fork");
  if (child == 0) {
    close(sv[0]);
    Endpoint ep;
    connected_pair_side(&ep, sv[1], false);
    char go;
    read_all(sv[1], &go, 1);  // the parent's send is waiting for this receive
    CHECK(post_recv(&ep, 0, 64, 910) == 0, "post_recv");
    wait_for({&ep}, [&] { return !ep.received.empty(); }, 5, "the parent's late message");
    CHECK(ep.received[0].status == IBV_WC_SUCCESS && ep.received[0].wr_id == 910 && ep.received[0].byte_len == 32,
          "late message: %s", V.wc_status_str(ep.received[0].status));
    write_all(sv[1], "r", 1);
    read_all(sv[1], &go, 1);
    _exit(0);  // without cleanup: the parent must see the QP go away
  }
  close(sv[1]);
  Endpoint ep;
  connected_pair_side(&ep, sv[0], true);
  // The child has no receive posted: the send waits for it.
  CHECK(post_send(&ep, 0, 32, 911, 0) == 0, "post_send");
  pump_for({&ep}, 100);
  CHECK(ep.sent.empty(), "a send completed before the other process posted a receive");
  write_all(sv[0], "p", 1);
  char received;
  read_all(sv[0], &received, 1);
  wait_for({&ep}, [&] { return !ep.sent.empty(); }, 5, "the send after the child posted its receive");
  check_send_wc(ep.sent[0], 911, IBV_WC_SUCCESS);
  ep.sent.clear();

  // Sends the child never takes fail when it exits; then receives flush.
  CHECK(post_send(&ep, 0, 32, 920, 0) == 0, "post_send");
  CHECK(post_send(&ep, 0, 32, 921, 0, false) == 0, "post_send unsignaled");
  CHECK(post_recv(&ep, 0, 64, 900) == 0, "post_recv");
  pump_for({&ep}, 20);
  CHECK(ep.sent.empty(), "a send completed with no receive posted in the other process");
  write_all(sv[0], "x", 1);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child process failed");
  wait_for({&ep}, [&] { return !ep.received.empty() && ep.sent.size() >= 2; }, 1.0,
           "the failures after the peer exited");
  check_send_wc(ep.sent[0], 920, IBV_WC_RETRY_EXC_ERR);
  check_send_wc(ep.sent[1], 921, IBV_WC_WR_FLUSH_ERR);
  CHECK(ep.received[0].status == IBV_WC_WR_FLUSH_ERR && ep.received[0].wr_id == 900, "got %s",
        V.wc_status_str(ep.received[0].status));
  close(sv[0]);
  close_endpoint(&ep);
}

int run_mode(const char* lib) {
  load_verbs(lib);
  CHECK(V.fork_init() == 0, "ibv_fork_init");
  run_in_process_checks();
  run_fork_checks();
  fprintf(stderr, "fake verbs smoke (%s): checks passed\n", g_mode);
  return 0;
}

// Runs this program again for the RoCE (eth) link layer.
int run_eth_child(const char* self, const char* lib) {
  const pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) {
    setenv("HCL_FAKE_VERBS_LINK_LAYER", "eth", 1);
    execl("/proc/self/exe", self, lib, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s path/to/libhcl-fake-verbs.so\n", argv[0]);
    return 2;
  }
  setenv("HCL_FAKE_VERBS_DEVICES", "2", 1);
  setenv("HCL_FAKE_VERBS_DOWN", "fakeib1", 1);
  const char* ll = getenv("HCL_FAKE_VERBS_LINK_LAYER");
  g_mode = ll && strcmp(ll, "eth") == 0 ? "eth" : "ib";
  if (run_mode(argv[1]) != 0) return 1;
  if (strcmp(g_mode, "ib") == 0) {
    if (run_eth_child(argv[0], argv[1]) != 0) return 1;
    printf("fake verbs smoke: all checks passed\n");
  }
  return 0;
}
