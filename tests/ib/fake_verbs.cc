// A fake libibverbs for HCL's tests: it exports the ibv_* entry points HCL
// resolves with dlsym and emulates RC queue pairs (SEND / SEND_WITH_IMM)
// within a process or between processes, with no RDMA device or kernel
// support. It is compiled against the real <infiniband/verbs.h>, so struct
// layouts match, and never links the real library.
//
//  - Each open device context claims an id in 1..0xBFFF by binding the
//    abstract Unix socket "hcl-fake-verbs-id-<id>". The id is the port's LID
//    (InfiniBand) and is encoded in the GIDs (both link layers).
//  - Each QP listens on "hcl-fake-verbs-<id>-<qpn>" from creation on. At
//    RTR->RTS it connects to its destination's listener and sends a Hello
//    naming itself; the destination accepts one such connection and checks it.
//  - A message is a FrameHeader then the payload. There are no threads:
//    every QP of the process makes progress inside post_send, post_recv and
//    poll_cq, under one global mutex.
//  - A send completes as on a real RC HCA: only once the responder has
//    acknowledged it, i.e. matched the message to a receive it posted and
//    written it there. A message with no receive posted stays in the socket
//    (RNR retry forever) and its send stays incomplete, however long it
//    waits. The responder acknowledges on the reverse direction of the same
//    connection (its accepted incoming stream, read by the requester from its
//    outgoing stream), with AckFrames that count the messages consumed. Acks
//    so never queue behind the responder's own messages, which may be
//    waiting for receives (as on real HCAs, where ACKs are not subject to
//    RNR), and a QP acknowledges in RTR as well as in RTS. A message too
//    long for its receive is NAKed: IBV_WC_LOC_LEN_ERR at the responder,
//    IBV_WC_REM_INV_REQ_ERR at the requester, both QPs to ERR. A QP in ERR,
//    destroyed or reset still writes the acks it owes before closing.
//    With HCL_FAKE_VERBS_LOSE_ACKS=1 (read at each write) the network loses
//    every ack, as if each went missing and the responder was gone before
//    the requester retried: sends then never complete successfully, and
//    fail once the responder's streams end. NAKs still arrive.
//    Sends complete in posting order; every send, unsignaled ones included,
//    holds its slot (max_send_wr) until it completes and then until a
//    completion of it or of a later send of the QP is polled.
//  - When the peer goes away (its streams reach EOF or reset: QP destroyed,
//    moved to ERR or RESET, process gone) the oldest incomplete send, unsent
//    or unacknowledged, fails with IBV_WC_RETRY_EXC_ERR and the rest with
//    IBV_WC_WR_FLUSH_ERR. Messages the local QP had fully received before
//    the EOF are delivered first; receives then flush.
//
// It is strict like a real HCA and kernel: misuse fails with an errno and
// one "fake verbs: <call>: ..." line on stderr.
#include <infiniband/verbs.h>

#include <endian.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

// verbs.h wraps these in macros; the fake defines the real exported symbols.
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr

#define FV_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kMaxQp = 4096;
constexpr int kMaxQpWr = 1024;
constexpr int kMaxSge = 4;
constexpr int kMaxCqe = 4096;
constexpr int kMaxInline = 256;
constexpr int kMaxRdAtomic = 16;
constexpr int kMaxDevices = 64;
constexpr int kGidTableLen = 3;
constexpr uint8_t kPort = 1;
constexpr uint32_t kMaxMsgSize = 1u << 30;
constexpr uint64_t kMaxMrSize = 1ull << 40;
constexpr uint32_t kMaxId = 0xBFFF;
constexpr uint32_t kFirstQpn = 0x100;
constexpr uint32_t kMax24Bit = (1u << 24) - 1;

constexpr uint32_t kHelloMagic = 0x46564831;  // "FVH1"
constexpr uint32_t kFrameMagic = 0x46564d31;  // "FVM1"
constexpr uint32_t kAckMagic = 0x46564131;    // "FVA1"

// Room a responder keeps free in its acknowledgement direction, so that the
// last AckFrame it owes always fits when its QP closes (a small frame costs
// the kernel well under 1 KiB of send buffer).
constexpr int kAckReserve = 8192;
// Send buffer asked for in the acknowledgement direction (the kernel caps it).
constexpr int kAckSendBuffer = 4 << 20;

// First bytes a QP writes on its outgoing stream.
struct Hello {
  uint32_t magic;
  uint32_t id;
  uint32_t qpn;
  uint32_t psn;
};

struct FrameHeader {
  uint32_t magic;
  uint32_t has_imm;
  uint32_t imm;  // passed through as given (network order is the caller's business)
  uint32_t length;
};

// What a responder writes back on its incoming stream (the reverse direction
// of the requester's outgoing stream): `count` more messages landed in
// receives, then, if `nak`, the next one was refused (too long for its
// receive).
struct AckFrame {
  uint32_t magic;
  uint32_t count;
  uint32_t nak;
  uint32_t reserved;
};

// ---------------------------------------------------------------- objects

struct Device {
  ibv_device pub{};
  int index = 0;
  uint8_t link_layer = IBV_LINK_LAYER_INFINIBAND;
  bool down = false;
};

struct Context {
  ibv_context pub{};
  pid_t owner = 0;
  Device* dev = nullptr;
  uint16_t id = 0;
  int id_fd = -1;
  uint8_t link_layer = IBV_LINK_LAYER_INFINIBAND;  // as the device was at open
  bool down = false;
  uint32_t next_qpn = kFirstQpn;
  int pds = 0;
  int cqs = 0;
};

struct Pd {
  ibv_pd pub{};
  pid_t owner = 0;
  Context* ctx = nullptr;
  int mrs = 0;
  int qps = 0;
};

struct Mr {
  ibv_mr pub{};
  pid_t owner = 0;
  Pd* pd = nullptr;
  int access = 0;
  int busy = 0;  // outstanding WRs (and unpolled receive completions) using it
};

struct Qp;

struct Cqe {
  ibv_wc wc{};
  Qp* qp = nullptr;
  bool is_send = false;
  uint64_t seq = 0;        // sends: retires every send of the QP up to this one
  std::vector<Mr*> mrs;    // receives: released when polled
};

struct Cq {
  ibv_cq pub{};
  pid_t owner = 0;
  Context* ctx = nullptr;
  std::deque<Cqe> entries;
  std::vector<Qp*> qps;  // one entry per role (send, recv) a QP uses it in
  bool overflowed = false;
};

struct SendWr {
  uint64_t seq = 0;
  uint64_t wr_id = 0;
  bool signaled = false;
  uint32_t length = 0;
  std::vector<uint8_t> frame;  // header and payload, copied at post time
  size_t written = 0;
  std::vector<Mr*> mrs;
};

struct RecvWr {
  uint64_t wr_id = 0;
  std::vector<ibv_sge> sges;
  uint64_t capacity = 0;
  std::vector<Mr*> mrs;
};

// The incoming stream, accepted from the QP's listener, and its parser.
struct Inbound {
  int fd = -1;
  Hello hello{};
  size_t hello_got = 0;
  bool hello_done = false;
  FrameHeader header{};
  size_t header_got = 0;
  uint64_t payload_got = 0;
  // Acknowledgements owed to the requester, not yet written back.
  uint32_t acks_owed = 0;
  bool nak_owed = false;
  AckFrame ack_out{};  // a frame being written, if ack_out_left
  size_t ack_out_left = 0;
  int send_buffer = 0;  // SO_SNDBUF of fd
};

struct Qp {
  ibv_qp pub{};
  pid_t owner = 0;
  Context* ctx = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  ibv_qp_cap cap{};
  bool sig_all = false;

  int listen_fd = -1;
  int out_fd = -1;
  Inbound in;
  bool unreachable = false;  // the connect at RTS found no listener
  bool out_closed = false;   // the peer closed our outgoing stream

  uint16_t remote_id = 0;
  uint32_t remote_qpn = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;

  // Set where an error is found; settle() then moves the QP to ERR, and the
  // oldest incomplete (unsent or unacknowledged) send completes with this status.
  std::optional<ibv_wc_status> fault;

  // Sends move from sq_pending to sq_unacked to sq_done, in posting order.
  std::deque<SendWr> sq_pending;  // not yet fully written
  std::deque<SendWr> sq_unacked;  // written, the responder has not acknowledged them
  std::deque<SendWr> sq_done;     // completed (or unsignaled), not yet retired by a poll
  AckFrame ack_in{};              // acknowledgement being read from out_fd
  size_t ack_in_got = 0;
  uint64_t next_seq = 0;
  std::deque<RecvWr> rq;
  int rq_unpolled = 0;  // receive completions in the CQ, still holding a slot
};

// Live objects, keyed by the address of their public ibv_* struct.
template <class Obj>
struct Registry {
  std::unordered_map<const void*, std::unique_ptr<Obj>> live;

  Obj* add(std::unique_ptr<Obj> obj) {
    Obj* raw = obj.get();
    live.emplace(&raw->pub, std::move(obj));
    return raw;
  }
  Obj* find(const void* pub) const {
    auto it = live.find(pub);
    return it == live.end() ? nullptr : it->second.get();
  }
  void remove(Obj* obj) { live.erase(&obj->pub); }
};

struct State {
  std::mutex mu;
  const char* call = "";  // the entry point running, for error lines
  std::vector<std::unique_ptr<Device>> devices;  // never shrinks
  std::unordered_set<ibv_device**> lists;
  Registry<Context> contexts;
  Registry<Pd> pds;
  Registry<Mr> mrs;
  Registry<Cq> cqs;
  Registry<Qp> qps;
  std::unordered_map<uint32_t, Mr*> mr_by_lkey;
  uint32_t next_key = 0x1000;
};

// Never destroyed: a process may still call verbs from exit paths.
State& state() {
  static State* s = new State;
  return *s;
}

// Locks the fake and names the running call for error lines.
class Entry {
 public:
  explicit Entry(const char* call) : lock_(state().mu) { state().call = call; }

 private:
  std::lock_guard<std::mutex> lock_;
};

[[gnu::format(printf, 2, 3)]] int fail(int err, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fake verbs: %s: %s\n", state().call, msg);
  return err;
}

template <class T>
T* fail_null(int err, const char* what) {
  errno = fail(err, "%s", what);
  return nullptr;
}

// Finds a live object made by this process; verbs objects do not survive fork.
template <class Obj>
Obj* lookup(Registry<Obj>& reg, const void* handle, const char* what) {
  Obj* obj = handle ? reg.find(handle) : nullptr;
  if (!obj) {
    fail(0, "%s %p is not a live object of this library", what, handle);
    return nullptr;
  }
  if (obj->owner != getpid()) {
    fail(0, "%s %p belongs to process %d (verbs objects do not survive fork)", what, handle,
         static_cast<int>(obj->owner));
    return nullptr;
  }
  return obj;
}

Device* find_device(const ibv_device* dev) {
  for (auto& d : state().devices)
    if (&d->pub == dev) return d.get();
  fail(0, "device %p is not one of this library's devices", static_cast<const void*>(dev));
  return nullptr;
}

const char* state_name(int s) {
  static const char* const kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return s >= 0 && s < 7 ? kNames[s] : "UNKNOWN";
}

void hold(const std::vector<Mr*>& mrs) {
  for (Mr* mr : mrs) ++mr->busy;
}

void release(std::vector<Mr*>& mrs) {
  for (Mr* mr : mrs) --mr->busy;
  mrs.clear();
}

// ---------------------------------------------------------------- addressing

uint64_t device_guid(int index) { return 0x02fa4efffe000000ull | static_cast<uint64_t>(index + 1); }

// GID 0: fe80::/64 with an interface id holding the context id. GIDs 1
// and 2: on Ethernet the IPv4-mapped ::ffff:127.0.<id>>8>.<id&255>, as
// RoCE v1 and as RoCE v2 (as an mlx5 lists each address twice; only
// _ibv_query_gid_ex tells them apart); on InfiniBand the same interface id
// under fec0::/64.
ibv_gid make_gid(uint8_t link_layer, uint16_t id, int index) {
  ibv_gid g{};
  if (index >= 1 && link_layer == IBV_LINK_LAYER_ETHERNET) {
    g.raw[10] = 0xff;
    g.raw[11] = 0xff;
    g.raw[12] = 127;
  } else {
    static constexpr uint8_t kInterfaceId[6] = {0x02, 0xfa, 0x4e, 0xff, 0xfe, 0x00};
    g.raw[0] = 0xfe;
    g.raw[1] = index == 0 ? 0x80 : 0xc0;
    memcpy(g.raw + 8, kInterfaceId, sizeof kInterfaceId);
  }
  g.raw[14] = static_cast<uint8_t>(id >> 8);
  g.raw[15] = static_cast<uint8_t>(id & 0xff);
  return g;
}

// The context id a GID of either index names, or 0.
uint16_t id_from_gid(const ibv_gid& gid, uint8_t link_layer) {
  const uint16_t id = static_cast<uint16_t>(gid.raw[14] << 8 | gid.raw[15]);
  if (id == 0 || id > kMaxId) return 0;
  for (int index = 0; index < kGidTableLen; ++index) {
    const ibv_gid want = make_gid(link_layer, id, index);
    if (memcmp(want.raw, gid.raw, sizeof want.raw) == 0) return id;
  }
  return 0;
}

std::string qp_socket_name(uint32_t id, uint32_t qpn) {
  return "hcl-fake-verbs-" + std::to_string(id) + "-" + std::to_string(qpn);
}

socklen_t abstract_address(const std::string& name, sockaddr_un* addr) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  memcpy(addr->sun_path + 1, name.data(), name.size());  // sun_path[0] = 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// A bound (and, if backlog > 0, listening) non-blocking socket, or -errno.
int bind_abstract(const std::string& name, int backlog) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sockaddr_un addr;
  const socklen_t len = abstract_address(name, &addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      (backlog > 0 && listen(fd, backlog) != 0)) {
    const int err = errno;
    close(fd);
    return -err;
  }
  return fd;
}

// A connected blocking socket, or -errno.
int connect_abstract(const std::string& name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sockaddr_un addr;
  const socklen_t len = abstract_address(name, &addr);
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    close(fd);
    return -err;
  }
  return fd;
}

void close_fd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

enum class Io { Done, Again, Eof, Error };

// Reads until *got == want; non-blocking.
Io read_into(int fd, void* buf, size_t want, size_t* got) {
  while (*got < want) {
    const ssize_t n = recv(fd, static_cast<char*>(buf) + *got, want - *got, MSG_DONTWAIT);
    if (n > 0) {
      *got += static_cast<size_t>(n);
    } else if (n == 0) {
      return Io::Eof;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return errno == EINTR ? read_into(fd, buf, want, got) : Io::Again;
    } else {
      return errno == ECONNRESET ? Io::Eof : Io::Error;
    }
  }
  return Io::Done;
}

// Whether the peer closed the stream: EOF with nothing left to read.
bool peer_closed(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// ---------------------------------------------------------------- completions

void set_fault(Qp* qp, ibv_wc_status head_send_status) {
  if (!qp->fault) qp->fault = head_send_status;
}

void push_cqe(Cq* cq, Cqe&& e) {
  if (!cq->overflowed && cq->entries.size() >= static_cast<size_t>(cq->pub.cqe)) {
    cq->overflowed = true;
    fail(0, "CQ %p overflowed (%d entries): its QPs go to the error state", static_cast<void*>(&cq->pub),
         cq->pub.cqe);
    for (Qp* qp : cq->qps) set_fault(qp, IBV_WC_WR_FLUSH_ERR);
  }
  if (cq->overflowed) {
    release(e.mrs);
    return;
  }
  if (!e.is_send) ++e.qp->rq_unpolled;
  cq->entries.push_back(std::move(e));
}

void complete_send(Qp* qp, SendWr&& w, ibv_wc_status status) {
  if (status != IBV_WC_SUCCESS || w.signaled) {
    Cqe e;
    e.wc.wr_id = w.wr_id;
    e.wc.status = status;
    e.wc.opcode = IBV_WC_SEND;
    e.wc.byte_len = w.length;
    e.wc.qp_num = qp->pub.qp_num;
    e.qp = qp;
    e.is_send = true;
    e.seq = w.seq;
    push_cqe(qp->send_cq, std::move(e));
  }
  std::vector<uint8_t>().swap(w.frame);
  qp->sq_done.push_back(std::move(w));
}

void complete_recv(Qp* qp, RecvWr&& r, ibv_wc_status status, const FrameHeader* header) {
  Cqe e;
  e.wc.wr_id = r.wr_id;
  e.wc.status = status;
  e.wc.opcode = IBV_WC_RECV;
  e.wc.qp_num = qp->pub.qp_num;
  e.wc.src_qp = qp->remote_qpn;
  e.wc.slid = qp->ctx->link_layer == IBV_LINK_LAYER_INFINIBAND ? qp->remote_id : 0;
  if (header) {
    e.wc.byte_len = header->length;
    if (status == IBV_WC_SUCCESS && header->has_imm) {
      e.wc.wc_flags = IBV_WC_WITH_IMM;
      e.wc.imm_data = header->imm;
    }
  }
  e.qp = qp;
  e.mrs = std::move(r.mrs);
  push_cqe(qp->recv_cq, std::move(e));
}

// Frees what a polled completion held: send slots up to it, or its receive slot.
void retire(Cqe& e) {
  Qp* qp = e.qp;
  if (e.is_send) {
    while (!qp->sq_done.empty() && qp->sq_done.front().seq <= e.seq) {
      release(qp->sq_done.front().mrs);
      qp->sq_done.pop_front();
    }
  } else {
    release(e.mrs);
    --qp->rq_unpolled;
  }
}

// Writes the acknowledgements the QP owes on its incoming stream, coalesced
// into one AckFrame. Unless `last` (the stream is closing), it keeps
// kAckReserve of the send buffer free, so that the last frame always fits: a
// responder that went to ERR or away still acknowledges what it consumed.
void flush_acks(Qp* qp, bool last) {
  Inbound& in = qp->in;
  if (in.fd < 0) return;
  if (const char* lose = getenv("HCL_FAKE_VERBS_LOSE_ACKS"); lose && strcmp(lose, "1") == 0) in.acks_owed = 0;
  for (;;) {
    if (in.ack_out_left == 0) {
      if (in.acks_owed == 0 && !in.nak_owed) return;
      int queued = 0;
      if (!last && in.send_buffer > 0 && ioctl(in.fd, SIOCOUTQ, &queued) == 0 &&
          queued + kAckReserve > in.send_buffer)
        return;  // the requester is behind reading; the count grows meanwhile
      in.ack_out = AckFrame{kAckMagic, in.acks_owed, in.nak_owed ? 1u : 0u, 0};
      in.ack_out_left = sizeof in.ack_out;
      in.acks_owed = 0;
      in.nak_owed = false;
    }
    const char* from = reinterpret_cast<const char*>(&in.ack_out) + sizeof in.ack_out - in.ack_out_left;
    const ssize_t n = send(in.fd, from, in.ack_out_left, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) in.ack_out_left = 0;  // the requester went away
      return;
    }
    in.ack_out_left -= static_cast<size_t>(n);
  }
}

// The acks owed go first: the peer, seeing either stream end, finds them.
void close_streams(Qp* qp) {
  flush_acks(qp, true);
  close_fd(&qp->listen_fd);
  close_fd(&qp->out_fd);
  close_fd(&qp->in.fd);
  qp->in = Inbound{};
  qp->ack_in_got = 0;
}

// Moves a QP to ERR: streams close (the peer sees EOF) and all work flushes;
// the oldest incomplete send (unacknowledged or unsent) gets head_send_status.
void enter_error(Qp* qp, ibv_wc_status head_send_status) {
  qp->pub.state = IBV_QPS_ERR;
  close_streams(qp);
  ibv_wc_status status = head_send_status;
  for (auto* queue : {&qp->sq_unacked, &qp->sq_pending}) {
    while (!queue->empty()) {
      SendWr w = std::move(queue->front());
      queue->pop_front();
      complete_send(qp, std::move(w), status);
      status = IBV_WC_WR_FLUSH_ERR;
    }
  }
  while (!qp->rq.empty()) {
    RecvWr r = std::move(qp->rq.front());
    qp->rq.pop_front();
    complete_recv(qp, std::move(r), IBV_WC_WR_FLUSH_ERR, nullptr);
  }
}

// Applies pending faults; a flush may overflow a CQ and fault more QPs.
void settle() {
  for (bool again = true; again;) {
    again = false;
    for (auto& entry : state().qps.live) {
      Qp* qp = entry.second.get();
      if (qp->fault && qp->pub.state != IBV_QPS_ERR) {
        enter_error(qp, *qp->fault);
        again = true;
      }
    }
  }
}

void drop_cqes_of(Cq* cq, Qp* qp) {
  auto& entries = cq->entries;
  for (Cqe& e : entries)
    if (e.qp == qp) release(e.mrs);
  entries.erase(std::remove_if(entries.begin(), entries.end(), [qp](const Cqe& e) { return e.qp == qp; }),
                entries.end());
}

// Forgets all work and connections, as a move to RESET or destroy does.
void discard_work(Qp* qp) {
  close_streams(qp);
  for (auto* queue : {&qp->sq_pending, &qp->sq_unacked, &qp->sq_done}) {
    for (SendWr& w : *queue) release(w.mrs);
    queue->clear();
  }
  for (RecvWr& r : qp->rq) release(r.mrs);
  qp->rq.clear();
  drop_cqes_of(qp->send_cq, qp);
  if (qp->recv_cq != qp->send_cq) drop_cqes_of(qp->recv_cq, qp);
  qp->rq_unpolled = 0;
  qp->fault.reset();
  qp->unreachable = false;
  qp->out_closed = false;
  qp->remote_id = 0;
  qp->remote_qpn = 0;
}

// ---------------------------------------------------------------- progress

void peer_gone(Qp* qp) { set_fault(qp, IBV_WC_RETRY_EXC_ERR); }

void read_acks(Qp* qp);

// The incoming stream ended: the peer QP went away. What it acknowledged (or
// refused) before going is waiting on the outgoing stream; take that first.
void incoming_gone(Qp* qp) {
  read_acks(qp);
  peer_gone(qp);
}

void reject_incoming(Qp* qp) {
  close_fd(&qp->in.fd);
  qp->in = Inbound{};
}

bool read_hello(Qp* qp) {
  Inbound& in = qp->in;
  const Io io = read_into(in.fd, &in.hello, sizeof in.hello, &in.hello_got);
  if (io == Io::Again) return false;
  if (io != Io::Done) {  // closed before saying who it is
    reject_incoming(qp);
    return false;
  }
  const Hello& h = in.hello;
  if (h.magic != kHelloMagic || h.id != qp->remote_id || h.qpn != qp->remote_qpn || h.psn != qp->rq_psn) {
    fail(0,
         "QP 0x%x rejected a connection from QP 0x%x of id %u with sq_psn %u: its destination is QP 0x%x of "
         "id %u with rq_psn %u",
         qp->pub.qp_num, h.qpn, h.id, h.psn, qp->remote_qpn, qp->remote_id, qp->rq_psn);
    reject_incoming(qp);
    return false;
  }
  in.hello_done = true;
  return true;
}

void message_too_long(Qp* qp) {
  RecvWr r = std::move(qp->rq.front());
  qp->rq.pop_front();
  fail(0, "QP 0x%x: a %u-byte message arrived for a receive of %llu bytes: IBV_WC_LOC_LEN_ERR, QP to error",
       qp->pub.qp_num, qp->in.header.length, static_cast<unsigned long long>(r.capacity));
  complete_recv(qp, std::move(r), IBV_WC_LOC_LEN_ERR, &qp->in.header);
  qp->in.nak_owed = true;  // the requester's send fails with IBV_WC_REM_INV_REQ_ERR
  set_fault(qp, IBV_WC_WR_FLUSH_ERR);
}

// Where byte `offset` of a message goes in a receive's scatter list, and how
// many bytes fit there contiguously.
std::pair<char*, size_t> scatter_slot(const RecvWr& r, uint64_t offset) {
  for (const ibv_sge& sge : r.sges) {
    if (offset < sge.length)
      return {reinterpret_cast<char*>(sge.addr) + offset, static_cast<size_t>(sge.length - offset)};
    offset -= sge.length;
  }
  return {nullptr, 0};
}

Io read_payload(Qp* qp, const RecvWr& r) {
  Inbound& in = qp->in;
  while (in.payload_got < in.header.length) {
    auto [where, room] = scatter_slot(r, in.payload_got);
    const size_t want = std::min<uint64_t>(room, in.header.length - in.payload_got);
    size_t got = 0;
    const Io io = read_into(in.fd, where, want, &got);
    in.payload_got += got;
    if (io != Io::Done) return io;
  }
  return Io::Done;
}

// Reads incoming messages into posted receives, in order, and owes the
// requester an acknowledgement for each. A message with no receive posted
// stays in the socket (RNR retry forever) and its send stays incomplete.
void read_incoming(Qp* qp) {
  Inbound& in = qp->in;
  if (!in.hello_done && !read_hello(qp)) return;
  while (!qp->fault) {
    if (in.header_got < sizeof in.header) {
      if (qp->rq.empty()) {
        if (in.header_got == 0 && peer_closed(in.fd)) incoming_gone(qp);
        return;
      }
      const Io io = read_into(in.fd, &in.header, sizeof in.header, &in.header_got);
      if (io == Io::Again) return;
      if (io != Io::Done) return incoming_gone(qp);
      if (in.header.magic != kFrameMagic) {
        fail(0, "QP 0x%x: garbage on the incoming stream", qp->pub.qp_num);
        return set_fault(qp, IBV_WC_WR_FLUSH_ERR);
      }
      if (in.header.length > qp->rq.front().capacity) return message_too_long(qp);
      in.payload_got = 0;
    }
    const Io io = read_payload(qp, qp->rq.front());
    if (io == Io::Again) return;
    if (io != Io::Done) return incoming_gone(qp);
    RecvWr r = std::move(qp->rq.front());
    qp->rq.pop_front();
    complete_recv(qp, std::move(r), IBV_WC_SUCCESS, &in.header);
    in.header_got = 0;
    ++in.acks_owed;
  }
}

void serve_incoming(Qp* qp) {
  read_incoming(qp);
  flush_acks(qp, false);
}

// Accepts the incoming stream. Further connections are refused (closed): an
// RC responder drops packets from QPs other than its destination, so their
// senders fail with retry exceeded.
void accept_incoming(Qp* qp) {
  const int fd = accept4(qp->listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return;
  if (qp->in.fd >= 0) {
    fail(0, "QP 0x%x is connected already (to QP 0x%x of id %u): refused another connection", qp->pub.qp_num,
         qp->remote_qpn, qp->remote_id);
    close(fd);
    return;
  }
  qp->in = Inbound{};
  qp->in.fd = fd;
  int size = kAckSendBuffer;
  socklen_t len = sizeof size;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);  // best effort
  if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len) == 0) qp->in.send_buffer = size;
  serve_incoming(qp);
}

// Completes the oldest incomplete send with a responder's NAK. The responder
// refuses a message on its header, so the send may still be partly unwritten.
void nak_received(Qp* qp) {
  std::deque<SendWr>* queue = &qp->sq_unacked;
  if (queue->empty() && !qp->sq_pending.empty() && qp->sq_pending.front().written > 0) queue = &qp->sq_pending;
  if (queue->empty()) {
    fail(0, "QP 0x%x: a NAK arrived with no send outstanding", qp->pub.qp_num);
    return set_fault(qp, IBV_WC_WR_FLUSH_ERR);
  }
  SendWr w = std::move(queue->front());
  queue->pop_front();
  fail(0, "QP 0x%x: the responder refused send wr_id %llu (%u bytes, too long for its receive): "
       "IBV_WC_REM_INV_REQ_ERR, QP to error",
       qp->pub.qp_num, static_cast<unsigned long long>(w.wr_id), w.length);
  complete_send(qp, std::move(w), IBV_WC_REM_INV_REQ_ERR);
  set_fault(qp, IBV_WC_WR_FLUSH_ERR);
}

void ack_received(Qp* qp, const AckFrame& ack) {
  if (ack.magic != kAckMagic || ack.count > qp->sq_unacked.size()) {
    fail(0, "QP 0x%x: garbage on the acknowledgement stream (%u acks for %zu unacknowledged sends)",
         qp->pub.qp_num, ack.count, qp->sq_unacked.size());
    return set_fault(qp, IBV_WC_WR_FLUSH_ERR);
  }
  for (uint32_t i = 0; i < ack.count; ++i) {
    SendWr w = std::move(qp->sq_unacked.front());
    qp->sq_unacked.pop_front();
    complete_send(qp, std::move(w), IBV_WC_SUCCESS);
  }
  if (ack.nak) nak_received(qp);
}

// The responder closed our outgoing stream (QP destroyed, in ERR, or its
// process gone). Messages it sent before going may still be in our incoming
// stream, so with nothing outstanding we wait for the EOF there.
void outgoing_closed(Qp* qp) {
  close_fd(&qp->out_fd);
  qp->out_closed = true;
  if (!qp->sq_pending.empty() || !qp->sq_unacked.empty() || qp->in.fd < 0) peer_gone(qp);
}

// Reads the acknowledgements the responder wrote back on our outgoing stream;
// they arrive before its EOF.
void read_acks(Qp* qp) {
  while (!qp->fault && qp->out_fd >= 0) {
    const Io io = read_into(qp->out_fd, &qp->ack_in, sizeof qp->ack_in, &qp->ack_in_got);
    if (io == Io::Again) return;
    if (io != Io::Done) return outgoing_closed(qp);
    qp->ack_in_got = 0;
    ack_received(qp, qp->ack_in);
  }
}

void write_outgoing(Qp* qp) {
  while (!qp->sq_pending.empty()) {
    SendWr& w = qp->sq_pending.front();
    const ssize_t n =
        send(qp->out_fd, w.frame.data() + w.written, w.frame.size() - w.written, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      read_acks(qp);  // what the responder acknowledged (or refused) before it went
      if (!qp->fault) peer_gone(qp);
      return;
    }
    w.written += static_cast<size_t>(n);
    if (w.written < w.frame.size()) continue;
    SendWr sent = std::move(w);
    qp->sq_pending.pop_front();
    std::vector<uint8_t>().swap(sent.frame);
    qp->sq_unacked.push_back(std::move(sent));  // completes when the responder acknowledges it
  }
}

enum class Role { Listen, In, Out };

void dispatch(Qp* qp, Role role, short revents) {
  if (qp->fault) return;
  switch (role) {
    case Role::Listen:
      return accept_incoming(qp);
    case Role::In:
      if (qp->in.fd >= 0) serve_incoming(qp);
      return;
    case Role::Out:
      if (qp->out_fd >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) read_acks(qp);
      if (!qp->fault && qp->out_fd >= 0 && (revents & POLLOUT)) write_outgoing(qp);
      return;
  }
}

bool sends_stuck(const Qp* qp) {
  return qp->unreachable || (qp->out_closed && (!qp->sq_pending.empty() || !qp->sq_unacked.empty()));
}

// One step for every connected QP of this process (a real HCA needs no
// polling to progress, so neither do QPs on other CQs here).
void progress() {
  const pid_t me = getpid();
  std::vector<pollfd> fds;
  std::vector<std::pair<Qp*, Role>> who;
  auto watch = [&](Qp* qp, int fd, short events, Role role) {
    fds.push_back(pollfd{fd, events, 0});
    who.emplace_back(qp, role);
  };
  for (auto& entry : state().qps.live) {
    Qp* qp = entry.second.get();
    const auto s = qp->pub.state;
    if (qp->owner != me || qp->fault || (s != IBV_QPS_RTR && s != IBV_QPS_RTS)) continue;
    if (sends_stuck(qp)) {
      peer_gone(qp);
      continue;
    }
    if (qp->listen_fd >= 0) watch(qp, qp->listen_fd, POLLIN, Role::Listen);
    const bool acks_owed = qp->in.acks_owed || qp->in.nak_owed || qp->in.ack_out_left;
    if (qp->in.fd >= 0) watch(qp, qp->in.fd, POLLIN | (acks_owed ? POLLOUT : 0), Role::In);
    if (qp->out_fd >= 0) watch(qp, qp->out_fd, POLLIN | (qp->sq_pending.empty() ? 0 : POLLOUT), Role::Out);
  }
  if (!fds.empty() && poll(fds.data(), fds.size(), 0) > 0) {
    for (size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents) dispatch(who[i].first, who[i].second, fds[i].revents);
  }
  settle();
}

// ---------------------------------------------------------------- devices

bool parse_env_config(int* count, uint8_t* link_layer, std::vector<std::string>* down) {
  *count = 1;
  if (const char* n = getenv("HCL_FAKE_VERBS_DEVICES"); n && *n) {
    char* end = nullptr;
    const long v = strtol(n, &end, 10);
    if (*end || v < 0 || v > kMaxDevices)
      return fail(0, "HCL_FAKE_VERBS_DEVICES=%s is not a count in 0..%d", n, kMaxDevices), false;
    *count = static_cast<int>(v);
  }
  *link_layer = IBV_LINK_LAYER_INFINIBAND;
  if (const char* ll = getenv("HCL_FAKE_VERBS_LINK_LAYER"); ll && *ll) {
    if (strcmp(ll, "eth") == 0)
      *link_layer = IBV_LINK_LAYER_ETHERNET;
    else if (strcmp(ll, "ib") != 0)
      return fail(0, "HCL_FAKE_VERBS_LINK_LAYER=%s is neither ib nor eth", ll), false;
  }
  down->clear();
  if (const char* list = getenv("HCL_FAKE_VERBS_DOWN")) {
    std::string rest = list;
    for (size_t pos = 0; pos <= rest.size();) {
      const size_t comma = std::min(rest.find(',', pos), rest.size());
      if (comma > pos) down->push_back(rest.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  return true;
}

Device* device_at(int index) {
  auto& devices = state().devices;
  while (static_cast<int>(devices.size()) <= index) {
    auto d = std::make_unique<Device>();
    const int i = static_cast<int>(devices.size());
    d->index = i;
    d->pub.node_type = IBV_NODE_CA;
    d->pub.transport_type = IBV_TRANSPORT_IB;
    snprintf(d->pub.name, sizeof d->pub.name, "fakeib%d", i);
    snprintf(d->pub.dev_name, sizeof d->pub.dev_name, "uverbs%d", i);
    snprintf(d->pub.dev_path, sizeof d->pub.dev_path, "/sys/class/infiniband_verbs/uverbs%d", i);
    snprintf(d->pub.ibdev_path, sizeof d->pub.ibdev_path, "/sys/class/infiniband/fakeib%d", i);
    devices.push_back(std::move(d));
  }
  return devices[index].get();
}

ibv_device** get_device_list(int* num) {
  int count;
  uint8_t link_layer;
  std::vector<std::string> down;
  if (!parse_env_config(&count, &link_layer, &down)) {
    errno = EINVAL;
    return nullptr;
  }
  for (const std::string& name : down) {
    bool known = false;
    for (int i = 0; i < count; ++i) known |= name == "fakeib" + std::to_string(i);
    if (!known) return fail_null<ibv_device*>(EINVAL, ("HCL_FAKE_VERBS_DOWN names no device: " + name).c_str());
  }
  auto** list = static_cast<ibv_device**>(calloc(count + 1, sizeof(ibv_device*)));
  if (!list) return fail_null<ibv_device*>(ENOMEM, "out of memory");
  for (int i = 0; i < count; ++i) {
    Device* d = device_at(i);
    d->link_layer = link_layer;
    d->down = std::find(down.begin(), down.end(), d->pub.name) != down.end();
    list[i] = &d->pub;
  }
  state().lists.insert(list);
  if (num) *num = count;
  return list;
}

// Claims a context id, unique across processes while the socket stays bound.
int claim_id(int device_index, uint16_t* id) {
  const uint32_t start = (static_cast<uint32_t>(getpid()) * 7 + device_index) % kMaxId + 1;
  for (uint32_t step = 0; step < kMaxId; ++step) {
    const uint32_t candidate = (start - 1 + step) % kMaxId + 1;
    const int fd = bind_abstract("hcl-fake-verbs-id-" + std::to_string(candidate), 0);
    if (fd >= 0) {
      *id = static_cast<uint16_t>(candidate);
      return fd;
    }
    if (fd != -EADDRINUSE) return fd;
  }
  return -EADDRINUSE;
}

int poll_cq_op(ibv_cq* cq, int num_entries, ibv_wc* wc);
int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

ibv_context* open_device(ibv_device* device) {
  Device* dev = find_device(device);
  if (!dev) {
    errno = ENODEV;
    return nullptr;
  }
  auto ctx = std::make_unique<Context>();
  ctx->id_fd = claim_id(dev->index, &ctx->id);
  if (ctx->id_fd < 0) return fail_null<ibv_context>(-ctx->id_fd, "cannot claim a context id socket");
  ctx->owner = getpid();
  ctx->dev = dev;
  ctx->link_layer = dev->link_layer;
  ctx->down = dev->down;
  ibv_context& pub = ctx->pub;
  pub.device = device;
  pub.ops.poll_cq = poll_cq_op;
  pub.ops.post_send = post_send_op;
  pub.ops.post_recv = post_recv_op;
  pub.cmd_fd = -1;
  pub.async_fd = -1;
  pub.num_comp_vectors = 1;
  pthread_mutex_init(&pub.mutex, nullptr);
  return &state().contexts.add(std::move(ctx))->pub;
}

int close_device(ibv_context* context) {
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx) return EINVAL;
  if (ctx->pds || ctx->cqs)
    return fail(EBUSY, "context still has %d PDs and %d CQs", ctx->pds, ctx->cqs);
  close_fd(&ctx->id_fd);
  pthread_mutex_destroy(&ctx->pub.mutex);
  state().contexts.remove(ctx);
  return 0;
}

void fill_device_attr(const Context* ctx, ibv_device_attr* a) {
  *a = ibv_device_attr{};
  snprintf(a->fw_ver, sizeof a->fw_ver, "fake");
  a->node_guid = htobe64(device_guid(ctx->dev->index));
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = kMaxMrSize;
  a->page_size_cap = 4096;
  a->max_qp = kMaxQp;
  a->max_qp_wr = kMaxQpWr;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
  a->max_sge = kMaxSge;
  a->max_sge_rd = kMaxSge;
  a->max_cq = 1 << 16;
  a->max_cqe = kMaxCqe;
  a->max_mr = 1 << 20;
  a->max_pd = 1 << 16;
  a->max_qp_rd_atom = kMaxRdAtomic;
  a->max_res_rd_atom = kMaxRdAtomic * kMaxQp;
  a->max_qp_init_rd_atom = kMaxRdAtomic;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = 1;
}

void fill_port_attr(const Context* ctx, ibv_port_attr* a) {
  const bool ib = ctx->link_layer == IBV_LINK_LAYER_INFINIBAND;
  *a = ibv_port_attr{};
  a->state = ctx->down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = kGidTableLen;
  a->max_msg_sz = kMaxMsgSize;
  a->pkey_tbl_len = 1;
  a->lid = ib ? ctx->id : 0;
  a->sm_lid = ib ? 1 : 0;
  a->max_vl_num = 1;
  a->active_width = 2;   // 4x
  a->active_speed = 32;  // EDR: 4x EDR = 100 Gb/s
  a->phys_state = ctx->down ? 3 : 5;  // disabled : link up
  a->link_layer = ctx->link_layer;
}

// ---------------------------------------------------------------- PDs, MRs, CQs

ibv_pd* alloc_pd(ibv_context* context) {
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx) {
    errno = EINVAL;
    return nullptr;
  }
  auto pd = std::make_unique<Pd>();
  pd->owner = ctx->owner;
  pd->ctx = ctx;
  pd->pub.context = context;
  pd->pub.handle = state().next_key++;
  ++ctx->pds;
  return &state().pds.add(std::move(pd))->pub;
}

int dealloc_pd(ibv_pd* handle) {
  Pd* pd = lookup(state().pds, handle, "PD");
  if (!pd) return EINVAL;
  if (pd->mrs || pd->qps) return fail(EBUSY, "PD still has %d MRs and %d QPs", pd->mrs, pd->qps);
  --pd->ctx->pds;
  state().pds.remove(pd);
  return 0;
}

constexpr int kMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                          IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_OPTIONAL_RANGE;

ibv_mr* reg_mr(ibv_pd* handle, void* addr, size_t length, int access) {
  Pd* pd = lookup(state().pds, handle, "PD");
  if (!pd) {
    errno = EINVAL;
    return nullptr;
  }
  const auto start = reinterpret_cast<uintptr_t>(addr);
  if (!addr || length == 0 || length > kMaxMrSize || start + length < start)
    return fail_null<ibv_mr>(EINVAL, ("bad range " + std::to_string(start) + "+" + std::to_string(length)).c_str());
  if (access & ~kMrAccess)
    return fail_null<ibv_mr>(EINVAL, "access flags outside LOCAL_WRITE|REMOTE_*|optional (not supported here)");
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
    return fail_null<ibv_mr>(EINVAL, "REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE");
  auto mr = std::make_unique<Mr>();
  mr->owner = pd->owner;
  mr->pd = pd;
  mr->access = access;
  const uint32_t key = state().next_key++;
  mr->pub = ibv_mr{&pd->ctx->pub, handle, addr, length, key, key, key};
  ++pd->mrs;
  Mr* raw = state().mrs.add(std::move(mr));
  state().mr_by_lkey[key] = raw;
  return &raw->pub;
}

int dereg_mr(ibv_mr* handle) {
  Mr* mr = lookup(state().mrs, handle, "MR");
  if (!mr) return EINVAL;
  if (mr->busy)
    return fail(EBUSY, "MR lkey 0x%x is still used by %d outstanding work requests", mr->pub.lkey, mr->busy);
  --mr->pd->mrs;
  state().mr_by_lkey.erase(mr->pub.lkey);
  state().mrs.remove(mr);
  return 0;
}

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx) {
    errno = EINVAL;
    return nullptr;
  }
  if (cqe < 1 || cqe > kMaxCqe) {
    errno = fail(EINVAL, "cqe %d is outside 1..%d", cqe, kMaxCqe);
    return nullptr;
  }
  if (channel) return fail_null<ibv_cq>(EINVAL, "completion channels are not supported by the fake");
  if (comp_vector != 0) {
    errno = fail(EINVAL, "comp_vector %d >= num_comp_vectors 1", comp_vector);
    return nullptr;
  }
  auto cq = std::make_unique<Cq>();
  cq->owner = ctx->owner;
  cq->ctx = ctx;
  cq->pub.context = context;
  cq->pub.cq_context = cq_context;
  cq->pub.handle = state().next_key++;
  cq->pub.cqe = cqe;
  pthread_mutex_init(&cq->pub.mutex, nullptr);
  pthread_cond_init(&cq->pub.cond, nullptr);
  ++ctx->cqs;
  return &state().cqs.add(std::move(cq))->pub;
}

int destroy_cq(ibv_cq* handle) {
  Cq* cq = lookup(state().cqs, handle, "CQ");
  if (!cq) return EINVAL;
  if (!cq->qps.empty()) return fail(EBUSY, "CQ is still used by %zu QP roles", cq->qps.size());
  for (Cqe& e : cq->entries) release(e.mrs);
  pthread_mutex_destroy(&cq->pub.mutex);
  pthread_cond_destroy(&cq->pub.cond);
  --cq->ctx->cqs;
  state().cqs.remove(cq);
  return 0;
}

int poll_cq(ibv_cq* handle, int num_entries, ibv_wc* wc) {
  Cq* cq = lookup(state().cqs, handle, "CQ");
  if (!cq) return -EINVAL;
  if (num_entries < 0 || (num_entries > 0 && !wc)) return -fail(EINVAL, "bad num_entries %d or wc", num_entries);
  progress();
  int got = 0;
  while (got < num_entries && !cq->entries.empty()) {
    Cqe e = std::move(cq->entries.front());
    cq->entries.pop_front();
    wc[got++] = e.wc;
    retire(e);
  }
  if (got == 0 && cq->overflowed) return -fail(EOVERFLOW, "CQ %p has overflowed", static_cast<void*>(handle));
  return got;
}

// ---------------------------------------------------------------- QPs

std::string qp_listen_name(const Qp* qp) { return qp_socket_name(qp->ctx->id, qp->pub.qp_num); }

bool check_caps(const ibv_qp_cap& cap) {
  if (cap.max_send_wr < 1 || cap.max_send_wr > kMaxQpWr || cap.max_recv_wr < 1 || cap.max_recv_wr > kMaxQpWr)
    return fail(0, "max_send_wr %u / max_recv_wr %u outside 1..%d", cap.max_send_wr, cap.max_recv_wr, kMaxQpWr),
           false;
  if (cap.max_send_sge > kMaxSge || cap.max_recv_sge > kMaxSge)
    return fail(0, "max_send_sge %u / max_recv_sge %u above %d", cap.max_send_sge, cap.max_recv_sge, kMaxSge),
           false;
  if (cap.max_inline_data > kMaxInline)
    return fail(0, "max_inline_data %u above %d", cap.max_inline_data, kMaxInline), false;
  return true;
}

Cq* lookup_qp_cq(ibv_cq* handle, const Pd* pd, const char* role) {
  Cq* cq = lookup(state().cqs, handle, role);
  if (cq && cq->ctx != pd->ctx) {
    fail(0, "%s belongs to another context than the PD", role);
    return nullptr;
  }
  return cq;
}

ibv_qp* create_qp(ibv_pd* handle, ibv_qp_init_attr* attr) {
  Pd* pd = lookup(state().pds, handle, "PD");
  if (!pd || !attr) {
    if (pd) fail(0, "init_attr is NULL");
    errno = EINVAL;
    return nullptr;
  }
  if (attr->qp_type != IBV_QPT_RC) {
    errno = fail(EINVAL, "qp_type %d: the fake supports IBV_QPT_RC only", attr->qp_type);
    return nullptr;
  }
  if (attr->srq) return fail_null<ibv_qp>(EINVAL, "SRQs are not supported by the fake");
  Cq* send_cq = lookup_qp_cq(attr->send_cq, pd, "send_cq");
  Cq* recv_cq = send_cq ? lookup_qp_cq(attr->recv_cq, pd, "recv_cq") : nullptr;
  if (!recv_cq || !check_caps(attr->cap)) {
    errno = EINVAL;
    return nullptr;
  }
  if (state().qps.live.size() >= static_cast<size_t>(kMaxQp)) return fail_null<ibv_qp>(ENOMEM, "too many QPs");

  auto qp = std::make_unique<Qp>();
  qp->owner = pd->owner;
  qp->ctx = pd->ctx;
  qp->pd = pd;
  qp->send_cq = send_cq;
  qp->recv_cq = recv_cq;
  qp->cap = attr->cap;
  qp->sig_all = attr->sq_sig_all != 0;
  ibv_qp& pub = qp->pub;
  pub.context = &pd->ctx->pub;
  pub.qp_context = attr->qp_context;
  pub.pd = handle;
  pub.send_cq = attr->send_cq;
  pub.recv_cq = attr->recv_cq;
  pub.qp_num = pd->ctx->next_qpn++;
  pub.handle = pub.qp_num;
  pub.state = IBV_QPS_RESET;
  pub.qp_type = IBV_QPT_RC;
  qp->listen_fd = bind_abstract(qp_listen_name(qp.get()), 16);
  if (qp->listen_fd < 0) return fail_null<ibv_qp>(-qp->listen_fd, "cannot bind the QP's listening socket");
  pthread_mutex_init(&pub.mutex, nullptr);
  pthread_cond_init(&pub.cond, nullptr);
  ++pd->qps;
  send_cq->qps.push_back(qp.get());
  recv_cq->qps.push_back(qp.get());
  return &state().qps.add(std::move(qp))->pub;
}

void detach_from_cq(Cq* cq, Qp* qp) {
  auto it = std::find(cq->qps.begin(), cq->qps.end(), qp);
  if (it != cq->qps.end()) cq->qps.erase(it);
}

int destroy_qp(ibv_qp* handle) {
  Qp* qp = lookup(state().qps, handle, "QP");
  if (!qp) return EINVAL;
  discard_work(qp);
  detach_from_cq(qp->send_cq, qp);
  detach_from_cq(qp->recv_cq, qp);
  --qp->pd->qps;
  pthread_mutex_destroy(&qp->pub.mutex);
  pthread_cond_destroy(&qp->pub.cond);
  state().qps.remove(qp);
  return 0;
}

// The attribute bits each RC transition requires and allows (besides
// IBV_QP_STATE), as the kernel's ib_modify_qp_is_ok has them; alternate
// paths and SQD are not supported.
struct Transition {
  ibv_qp_state from, to;
  int required, optional;
};

constexpr Transition kTransitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         IBV_QP_MIN_RNR_TIMER,
     IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER},
};

int check_transition(const Qp* qp, ibv_qp_state from, ibv_qp_state to, int mask) {
  int required = 0, optional = 0;
  if (to != IBV_QPS_ERR && to != IBV_QPS_RESET) {
    const Transition* t = nullptr;
    for (const Transition& candidate : kTransitions)
      if (candidate.from == from && candidate.to == to) t = &candidate;
    if (!t) return fail(EINVAL, "QP 0x%x: transition %s->%s is not allowed", qp->pub.qp_num, state_name(from),
                        state_name(to));
    required = t->required;
    optional = t->optional;
  }
  const int missing = required & ~mask;
  const int unknown = mask & ~(required | optional | IBV_QP_STATE);
  if (missing || unknown)
    return fail(EINVAL, "QP 0x%x: %s->%s with attr_mask 0x%x: missing bits 0x%x, bits not allowed 0x%x",
                qp->pub.qp_num, state_name(from), state_name(to), mask, missing, unknown);
  return 0;
}

// Checks the address vector; on success *remote_id is the destination's id.
int check_av(const Qp* qp, const ibv_ah_attr& ah, uint16_t* remote_id) {
  const uint8_t ll = qp->ctx->link_layer;
  if (ah.port_num != kPort) return fail(EINVAL, "ah_attr.port_num %u is not 1", ah.port_num);
  if (ll == IBV_LINK_LAYER_ETHERNET && !ah.is_global)
    return fail(EINVAL, "RoCE (Ethernet link layer) needs ah_attr.is_global = 1");
  if (ah.is_global && ah.grh.sgid_index >= kGidTableLen)
    return fail(EINVAL, "grh.sgid_index %u >= gid_tbl_len %d", ah.grh.sgid_index, kGidTableLen);
  const uint16_t gid_id = ah.is_global ? id_from_gid(ah.grh.dgid, ll) : 0;
  if (ah.is_global && !gid_id) return fail(EINVAL, "grh.dgid is not a GID of any fake device context");
  if (ll == IBV_LINK_LAYER_ETHERNET) {
    *remote_id = gid_id;
    return 0;
  }
  if (ah.dlid == 0 || ah.dlid > kMaxId) return fail(EINVAL, "ah_attr.dlid %u is not a valid LID", ah.dlid);
  if (gid_id && gid_id != ah.dlid)
    return fail(EINVAL, "grh.dgid names id %u but dlid is %u", gid_id, ah.dlid);
  *remote_id = ah.dlid;
  return 0;
}

// Checks the values of the attributes in the mask.
int check_values(const Qp* qp, const ibv_qp_attr& a, int mask, uint16_t* remote_id) {
  if ((mask & IBV_QP_CUR_STATE) && a.cur_qp_state != qp->pub.state)
    return fail(EINVAL, "cur_qp_state %s but the QP is in %s", state_name(a.cur_qp_state), state_name(qp->pub.state));
  if ((mask & IBV_QP_PORT) && a.port_num != kPort) return fail(EINVAL, "port_num %u is not 1", a.port_num);
  if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index >= 1)
    return fail(EINVAL, "pkey_index %u >= pkey_tbl_len 1", a.pkey_index);
  const unsigned qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC;
  if ((mask & IBV_QP_ACCESS_FLAGS) && (a.qp_access_flags & ~qp_access))
    return fail(EINVAL, "qp_access_flags 0x%x has unknown bits", a.qp_access_flags);
  if ((mask & IBV_QP_PATH_MTU) && (a.path_mtu < IBV_MTU_256 || a.path_mtu > IBV_MTU_4096))
    return fail(EINVAL, "path_mtu %d is above the port's active mtu (IBV_MTU_4096) or invalid", a.path_mtu);
  if ((mask & IBV_QP_DEST_QPN) && (a.dest_qp_num > kMax24Bit || a.dest_qp_num == 0))
    return fail(EINVAL, "dest_qp_num 0x%x is not a QP number", a.dest_qp_num);
  if ((mask & IBV_QP_RQ_PSN) && a.rq_psn > kMax24Bit) return fail(EINVAL, "rq_psn 0x%x exceeds 24 bits", a.rq_psn);
  if ((mask & IBV_QP_SQ_PSN) && a.sq_psn > kMax24Bit) return fail(EINVAL, "sq_psn 0x%x exceeds 24 bits", a.sq_psn);
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > kMaxRdAtomic)
    return fail(EINVAL, "max_dest_rd_atomic %u > %d", a.max_dest_rd_atomic, kMaxRdAtomic);
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > kMaxRdAtomic)
    return fail(EINVAL, "max_rd_atomic %u > %d", a.max_rd_atomic, kMaxRdAtomic);
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31)
    return fail(EINVAL, "min_rnr_timer %u > 31", a.min_rnr_timer);
  if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31) return fail(EINVAL, "timeout %u > 31", a.timeout);
  if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) return fail(EINVAL, "retry_cnt %u > 7", a.retry_cnt);
  if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7) return fail(EINVAL, "rnr_retry %u > 7", a.rnr_retry);
  if (mask & IBV_QP_AV) return check_av(qp, a.ah_attr, remote_id);
  return 0;
}

// Connects the outgoing stream to the destination QP's listener. With no
// listener the QP fails its sends later, as a real HCA does after retries.
void connect_outgoing(Qp* qp) {
  const std::string name = qp_socket_name(qp->remote_id, qp->remote_qpn);
  const int fd = connect_abstract(name);
  const Hello hello{kHelloMagic, qp->ctx->id, qp->pub.qp_num, qp->sq_psn};
  if (fd >= 0 && send(fd, &hello, sizeof hello, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof hello) &&
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0) {
    qp->out_fd = fd;
    return;
  }
  if (fd >= 0) close(fd);
  fail(0, "QP 0x%x: no QP 0x%x of id %u to connect to: its sends will fail with IBV_WC_RETRY_EXC_ERR",
       qp->pub.qp_num, qp->remote_qpn, qp->remote_id);
  qp->unreachable = true;
}

int to_reset(Qp* qp) {
  discard_work(qp);
  qp->listen_fd = bind_abstract(qp_listen_name(qp), 16);
  if (qp->listen_fd < 0) return fail(-qp->listen_fd, "cannot re-bind the QP's listening socket");
  return 0;
}

int modify_qp(ibv_qp* handle, ibv_qp_attr* attr, int mask) {
  Qp* qp = lookup(state().qps, handle, "QP");
  if (!qp) return EINVAL;
  if (!attr) return fail(EINVAL, "attr is NULL");
  const auto from = qp->pub.state;
  const auto to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
  if (to < IBV_QPS_RESET || to > IBV_QPS_ERR) return fail(EINVAL, "qp_state %d is not a QP state", to);
  if (int err = check_transition(qp, from, to, mask)) return err;
  uint16_t remote_id = 0;
  if (int err = check_values(qp, *attr, mask, &remote_id)) return err;

  if (to == IBV_QPS_RESET) {
    qp->pub.state = IBV_QPS_RESET;
    return from == IBV_QPS_RESET ? 0 : to_reset(qp);
  }
  if (to == IBV_QPS_ERR) {
    if (from != IBV_QPS_ERR) enter_error(qp, IBV_WC_WR_FLUSH_ERR);
    settle();
    return 0;
  }
  if (mask & IBV_QP_AV) qp->remote_id = remote_id;
  if (mask & IBV_QP_DEST_QPN) qp->remote_qpn = attr->dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) qp->rq_psn = attr->rq_psn;
  if (mask & IBV_QP_SQ_PSN) qp->sq_psn = attr->sq_psn;
  qp->pub.state = to;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) connect_outgoing(qp);
  return 0;
}

// ---------------------------------------------------------------- data path

// Checks that an sge lies in an MR of the PD with the key and access given.
int check_sge(const Qp* qp, const ibv_sge& sge, int need_access, std::vector<Mr*>* mrs) {
  if (sge.length == 0) return fail(EINVAL, "sge of length 0 (an HCA reads that as 2 GiB)");
  auto it = state().mr_by_lkey.find(sge.lkey);
  Mr* mr = it == state().mr_by_lkey.end() ? nullptr : it->second;
  if (!mr || mr->pd != qp->pd)
    return fail(EINVAL, "QP 0x%x: lkey 0x%x is not an MR of the QP's PD", qp->pub.qp_num, sge.lkey);
  const auto mr_start = reinterpret_cast<uint64_t>(mr->pub.addr);
  const uint64_t mr_end = mr_start + mr->pub.length;
  if (sge.addr < mr_start || sge.addr > mr_end || sge.length > mr_end - sge.addr)
    return fail(EINVAL, "sge 0x%llx+%u lies outside MR lkey 0x%x (0x%llx+%zu)",
                static_cast<unsigned long long>(sge.addr), sge.length, sge.lkey,
                static_cast<unsigned long long>(mr_start), mr->pub.length);
  if ((mr->access & need_access) != need_access)
    return fail(EINVAL, "MR lkey 0x%x lacks IBV_ACCESS_LOCAL_WRITE for a receive", sge.lkey);
  mrs->push_back(mr);
  return 0;
}

// Checks a scatter/gather list; sums its length into *total.
int check_sges(const Qp* qp, const ibv_sge* list, int num, int max, int need_access, bool check_keys,
               uint64_t* total, std::vector<Mr*>* mrs) {
  if (num < 0 || num > max) return fail(EINVAL, "QP 0x%x: num_sge %d outside 0..%d", qp->pub.qp_num, num, max);
  if (num > 0 && !list) return fail(EINVAL, "sg_list is NULL with num_sge %d", num);
  *total = 0;
  for (int i = 0; i < num; ++i) {
    if (check_keys) {
      if (int err = check_sge(qp, list[i], need_access, mrs)) return err;
    } else if (list[i].length == 0) {
      return fail(EINVAL, "sge of length 0 (an HCA reads that as 2 GiB)");
    }
    *total += list[i].length;
  }
  return 0;
}

std::vector<uint8_t> make_frame(const ibv_send_wr& wr, uint32_t length) {
  FrameHeader h{kFrameMagic, wr.opcode == IBV_WR_SEND_WITH_IMM, 0, length};
  if (h.has_imm) h.imm = wr.imm_data;
  std::vector<uint8_t> frame(sizeof h + length);
  memcpy(frame.data(), &h, sizeof h);
  size_t at = sizeof h;
  for (int i = 0; i < wr.num_sge; ++i) {
    memcpy(frame.data() + at, reinterpret_cast<const void*>(wr.sg_list[i].addr), wr.sg_list[i].length);
    at += wr.sg_list[i].length;
  }
  return frame;
}

int post_one_send(Qp* qp, const ibv_send_wr& wr) {
  const size_t outstanding = qp->sq_pending.size() + qp->sq_unacked.size() + qp->sq_done.size();
  if (outstanding >= qp->cap.max_send_wr)
    return fail(ENOMEM, "QP 0x%x: %zu sends outstanding (max_send_wr %u; unsignaled ones count until a later "
                        "signaled completion is polled)",
                qp->pub.qp_num, outstanding, qp->cap.max_send_wr);
  if (wr.opcode != IBV_WR_SEND && wr.opcode != IBV_WR_SEND_WITH_IMM)
    return fail(EINVAL, "opcode %d: the fake supports only IBV_WR_SEND and IBV_WR_SEND_WITH_IMM (no RDMA "
                        "write/read or atomics)",
                wr.opcode);
  const unsigned flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE | IBV_SEND_FENCE;
  if (wr.send_flags & ~flags) return fail(EINVAL, "send_flags 0x%x has unsupported bits", wr.send_flags);
  const bool is_inline = wr.send_flags & IBV_SEND_INLINE;
  uint64_t total = 0;
  std::vector<Mr*> mrs;
  if (int err = check_sges(qp, wr.sg_list, wr.num_sge, static_cast<int>(qp->cap.max_send_sge), 0, !is_inline,
                           &total, &mrs))
    return err;
  if (total > kMaxMsgSize) return fail(EINVAL, "message of %llu bytes > max_msg_sz", (unsigned long long)total);
  if (is_inline && total > qp->cap.max_inline_data)
    return fail(EINVAL, "inline send of %llu bytes > max_inline_data %u", (unsigned long long)total,
                qp->cap.max_inline_data);
  SendWr w;
  w.seq = qp->next_seq++;
  w.wr_id = wr.wr_id;
  w.signaled = qp->sig_all || (wr.send_flags & IBV_SEND_SIGNALED);
  w.length = static_cast<uint32_t>(total);
  w.frame = make_frame(wr, w.length);
  w.mrs = std::move(mrs);
  hold(w.mrs);
  if (qp->pub.state == IBV_QPS_ERR)
    complete_send(qp, std::move(w), IBV_WC_WR_FLUSH_ERR);
  else
    qp->sq_pending.push_back(std::move(w));
  return 0;
}

int post_one_recv(Qp* qp, const ibv_recv_wr& wr) {
  const size_t outstanding = qp->rq.size() + static_cast<size_t>(qp->rq_unpolled);
  if (outstanding >= qp->cap.max_recv_wr)
    return fail(ENOMEM, "QP 0x%x: %zu receives outstanding (max_recv_wr %u)", qp->pub.qp_num, outstanding,
                qp->cap.max_recv_wr);
  RecvWr r;
  if (int err = check_sges(qp, wr.sg_list, wr.num_sge, static_cast<int>(qp->cap.max_recv_sge),
                           IBV_ACCESS_LOCAL_WRITE, true, &r.capacity, &r.mrs))
    return err;
  r.wr_id = wr.wr_id;
  r.sges.assign(wr.sg_list, wr.sg_list + wr.num_sge);
  hold(r.mrs);
  if (qp->pub.state == IBV_QPS_ERR)
    complete_recv(qp, std::move(r), IBV_WC_WR_FLUSH_ERR, nullptr);
  else
    qp->rq.push_back(std::move(r));
  return 0;
}

// Posts a list; on error *bad_wr is the first WR not posted.
template <class Wr, class PostOne>
int post_list(const char* what, ibv_qp* handle, Wr* wr, Wr** bad_wr, bool (*state_ok)(ibv_qp_state),
              PostOne post_one) {
  if (!bad_wr) return fail(EINVAL, "bad_wr is NULL");
  Qp* qp = lookup(state().qps, handle, "QP");
  int err = qp ? 0 : EINVAL;
  if (qp && !state_ok(qp->pub.state))
    err = fail(EINVAL, "QP 0x%x is in state %s: cannot post %s", qp->pub.qp_num, state_name(qp->pub.state), what);
  while (wr && !err) {
    err = post_one(qp, *wr);
    if (!err) wr = wr->next;
  }
  if (err) {
    *bad_wr = wr;
    return err;
  }
  progress();
  return 0;
}

int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Entry entry("ibv_post_send");
  return post_list("sends (needs RTS)", qp, wr, bad_wr,
                   [](ibv_qp_state s) { return s == IBV_QPS_RTS || s == IBV_QPS_ERR; }, post_one_send);
}

int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Entry entry("ibv_post_recv");
  return post_list("receives (needs INIT, RTR or RTS)", qp, wr, bad_wr,
                   [](ibv_qp_state s) {
                     return s == IBV_QPS_INIT || s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_ERR;
                   }, post_one_recv);
}

int poll_cq_op(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  Entry entry("ibv_poll_cq");
  return poll_cq(cq, num_entries, wc);
}

}  // namespace

// ---------------------------------------------------------------- exports

FV_EXPORT ibv_device** ibv_get_device_list(int* num) {
  Entry entry("ibv_get_device_list");
  return get_device_list(num);
}

FV_EXPORT void ibv_free_device_list(ibv_device** list) {
  Entry entry("ibv_free_device_list");
  if (state().lists.erase(list) == 0) {
    fail(0, "%p is not a list from ibv_get_device_list (or was freed already)", static_cast<void*>(list));
    return;
  }
  free(list);
}

FV_EXPORT const char* ibv_get_device_name(ibv_device* device) {
  Entry entry("ibv_get_device_name");
  Device* dev = find_device(device);
  return dev ? dev->pub.name : nullptr;
}

FV_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  Entry entry("ibv_get_device_guid");
  Device* dev = find_device(device);
  return dev ? htobe64(device_guid(dev->index)) : 0;
}

FV_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  Entry entry("ibv_open_device");
  return open_device(device);
}

FV_EXPORT int ibv_close_device(ibv_context* context) {
  Entry entry("ibv_close_device");
  return close_device(context);
}

FV_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  Entry entry("ibv_query_device");
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx || !attr) return ctx ? fail(EINVAL, "attr is NULL") : EINVAL;
  fill_device_attr(ctx, attr);
  return 0;
}

// The exported symbol has the compat signature; verbs.h's inline wrapper
// passes a full struct ibv_port_attr for contexts that are not extended.
FV_EXPORT int ibv_query_port(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) {
  Entry entry("ibv_query_port");
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx) return EINVAL;
  if (port != kPort || !attr) return fail(EINVAL, "port %u does not exist (or attr is NULL)", port);
  fill_port_attr(ctx, reinterpret_cast<ibv_port_attr*>(attr));
  return 0;
}

FV_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  Entry entry("ibv_query_gid");
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx) return EINVAL;
  if (port != kPort || index < 0 || index >= kGidTableLen || !gid)
    return fail(EINVAL, "port %u / gid index %d does not exist (gid_tbl_len %d)", port, index, kGidTableLen);
  *gid = make_gid(ctx->link_layer, ctx->id, index);
  return 0;
}

// The GID entry with its type: RoCE v1 for GIDs 0 and 1 on Ethernet, v2 for
// GID 2; InfiniBand's are all of type IB.
FV_EXPORT int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* out,
                                uint32_t flags, size_t entry_size) {
  Entry entry("_ibv_query_gid_ex");
  Context* ctx = lookup(state().contexts, context, "context");
  if (!ctx) return EINVAL;
  if (port != kPort || index >= static_cast<uint32_t>(kGidTableLen) || !out || flags != 0 ||
      entry_size < sizeof(ibv_gid_entry))
    return fail(EINVAL, "port %u / gid index %u / flags %u / entry size %zu refused", port, index, flags, entry_size);
  *out = ibv_gid_entry{};
  out->gid = make_gid(ctx->link_layer, ctx->id, static_cast<int>(index));
  out->gid_index = index;
  out->port_num = port;
  out->gid_type = ctx->link_layer != IBV_LINK_LAYER_ETHERNET ? IBV_GID_TYPE_IB
                  : index == 2                               ? IBV_GID_TYPE_ROCE_V2
                                                             : IBV_GID_TYPE_ROCE_V1;
  return 0;
}

FV_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Entry entry("ibv_alloc_pd");
  return alloc_pd(context);
}

FV_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  Entry entry("ibv_dealloc_pd");
  return dealloc_pd(pd);
}

FV_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  Entry entry("ibv_reg_mr");
  return reg_mr(pd, addr, length, access);
}

FV_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  Entry entry("ibv_dereg_mr");
  return dereg_mr(mr);
}

FV_EXPORT ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                                int comp_vector) {
  Entry entry("ibv_create_cq");
  return create_cq(context, cqe, cq_context, channel, comp_vector);
}

FV_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  Entry entry("ibv_destroy_cq");
  return destroy_cq(cq);
}

FV_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  Entry entry("ibv_create_qp");
  return create_qp(pd, attr);
}

FV_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  Entry entry("ibv_modify_qp");
  return modify_qp(qp, attr, attr_mask);
}

FV_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  Entry entry("ibv_destroy_qp");
  return destroy_qp(qp);
}

FV_EXPORT int ibv_fork_init(void) { return 0; }

FV_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const kText[] = {
      "success",
      "local length error",
      "local QP operation error",
      "local EE context operation error",
      "local protection error",
      "Work Request Flushed Error",
      "memory management operation error",
      "bad response error",
      "local access error",
      "remote invalid request error",
      "remote access error",
      "remote operation error",
      "transport retry counter exceeded",
      "RNR retry counter exceeded",
      "local RDD violation error",
      "remote invalid RD request",
      "aborted error",
      "invalid EE context number",
      "invalid EE context state",
      "fatal error",
      "response timeout error",
      "general error",
      "TM error",
      "TM software rendezvous",
  };
  const auto i = static_cast<size_t>(status);
  return i < sizeof kText / sizeof kText[0] ? kText[i] : "unknown";
}
