#include "transports/ib/ib_net.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <random>

#include "core/log.h"
#include "core/params.h"
#include "core/wire_order.h"
#include "transports/ib/ib_ports.h"
#include "transports/ib/ib_queue_pair.h"
#include "transports/side_socket.h"
#include "transports/ib/verbs_api.h"
#include "transports/net_plugin/net_plugin_abi.h"

namespace hcl::ib {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kHandleMagic = 0x48434c49;  // "HCLI"
constexpr int kMaxRequests = 32;               // per comm; HCL's connections keep 4 in flight
constexpr auto kPeerCheckEvery = std::chrono::milliseconds(1);
// How long a failed send waits for the peer's closing record, which travels
// over TCP and may come after the send's failure (a short HCL_IB_TIMEOUT).
constexpr auto kClosingRecordWait = std::chrono::milliseconds(100);

// What a listen handle carries. The listener's address is written in by
// the connecting rank (setHandleAddress); `pending` is the connecting
// rank's own state between connect() calls, kept in its copy of the handle.
struct Handle {
  uint32_t magic = kHandleMagic;
  uint16_t port = 0;  // the side listener's TCP port
  uint8_t family = 0;
  uint8_t ip[16] = {};
  uint64_t nonce = 0;
  void* pending = nullptr;
};

// In the handle's bytes: magic, port, family, ip and nonce little-endian at
// fixed offsets (what travels between ranks), then the pointer.
constexpr size_t kHandlePendingAt = 32;
static_assert(kHandlePendingAt + sizeof(void*) <= netabi::kHandleBytes);

void storeHandle(const Handle& h, void* bytes) {
  auto* out = static_cast<uint8_t*>(bytes);
  storeLittleEndian(out, h.magic);
  storeLittleEndian(out + 4, h.port);
  out[6] = h.family;
  out[7] = 0;
  std::memcpy(out + 8, h.ip, sizeof h.ip);
  storeLittleEndian(out + 24, h.nonce);
  std::memcpy(out + kHandlePendingAt, &h.pending, sizeof h.pending);
}

Handle loadHandle(const void* bytes) {
  const auto* in = static_cast<const uint8_t*>(bytes);
  Handle h;
  h.magic = loadLittleEndian<uint32_t>(in);
  h.port = loadLittleEndian<uint16_t>(in + 4);
  h.family = in[6];
  std::memcpy(h.ip, in + 8, sizeof h.ip);
  h.nonce = loadLittleEndian<uint64_t>(in + 24);
  std::memcpy(&h.pending, in + kHandlePendingAt, sizeof h.pending);
  return h;
}

struct Comm;

struct Request {
  Comm* comm = nullptr;
  bool inUse = false;
  bool done = false;
  bool sending = false;
  uint32_t tag = 0;
  size_t bytes = 0;
  uint64_t sequence = 0;  // of a send, counted from 0 on its comm
  Status error;
  Clock::time_point failureSeen{};  // of a send, when test() first saw it fail
};

// One direction of a link: a queue pair that only sends or only receives.
struct Comm {
  const VerbsApi* verbs = nullptr;
  const IbPort* port = nullptr;
  bool sending = false;
  int sideFd = -1;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  std::array<Request, kMaxRequests> requests;
  Status failure;
  Clock::time_point nextPeerCheck{};
  uint64_t sendsPosted = 0;       // a send comm's
  uint64_t receivesDelivered = 0;  // a receive comm's: messages placed into its receives
  // What the peer's receive comm wrote on closing: how many messages it got.
  std::array<uint8_t, sizeof(uint64_t)> closingRecord{};
  size_t closingRecordRead = 0;
  bool peerClosed = false;

  ~Comm() {
    // The queue pair goes first: it flushes whatever is still posted.
    if (qp) (void)verbs->destroyQp(qp);
    if (cq) (void)verbs->destroyCq(cq);
    if (sideFd >= 0) ::close(sideFd);
  }
  std::string where() const { return fmt::format("verbs {} ({})", sending ? "send" : "receive", port->summary.name); }
};

struct Listener {
  const IbPort* port = nullptr;
  int fd = -1;
  uint64_t nonce = 0;
  std::unique_ptr<struct Setup> accepting;
  ~Listener();
};

// A queue pair being set up over its side connection.
struct Setup {
  std::unique_ptr<Comm> comm;
  bool connected = false;  // the side connection is up
  QpInfo mine;
  std::array<uint8_t, kQpInfoWireBytes> mineWire{};
  size_t written = 0;  // of `mineWire`, to the peer
  std::array<uint8_t, kQpInfoWireBytes> in{};
  size_t read = 0;
  bool peerReady = false;  // its QpInfo arrived and the queue pair is ready to send

  void describe(const ibv_qp& qp, const IbPort& port, uint64_t nonce) {
    mine = describeQueuePair(qp, port, nonce);
    mineWire = encodeQpInfo(mine);
  }
};

Listener::~Listener() {
  accepting.reset();
  if (fd >= 0) ::close(fd);
}

uint64_t randomWord() {
  thread_local std::mt19937_64 engine(std::random_device{}());
  return engine();
}

class IbNetImpl final : public IbNet {
 public:
  IbNetImpl(const VerbsApi& verbs, IbSettings settings, std::vector<IbPort> ports)
      : verbs_(verbs), settings_(std::move(settings)), ports_(std::move(ports)) {
    for (const IbPort& p : ports_) summaries_.push_back(p.summary);
  }

  const std::string& name() const override { return name_; }
  int version() const override { return 0; }
  const std::string& library() const override { return verbs_.library; }
  const std::vector<IbPortSummary>& ports() const override { return summaries_; }

  Status devices(int* count) override {
    *count = static_cast<int>(ports_.size());
    return {};
  }

  Status properties(int device, netplugin::DeviceProperties& out) override {
    HCL_TRY(checkDevice(device));
    const IbPort& p = ports_[static_cast<size_t>(device)];
    out.name = p.summary.name;
    out.ptrSupport = netabi::kPtrHost;
    out.speedMbps = static_cast<int>(p.summary.speedMbps);
    out.maxComms = 0;
    out.maxMessageBytes = p.maxMessageBytes > 0 ? p.maxMessageBytes : size_t{1} << 30;
    return {};
  }

  Status listen(int device, void* handleOut, void** listenComm) override {
    HCL_TRY(checkDevice(device));
    auto l = std::make_unique<Listener>();
    l->port = &ports_[static_cast<size_t>(device)];
    l->nonce = randomWord();
    Handle h;
    HCL_TRY(side::openListener("verbs listen", &l->fd, &h.port));
    h.nonce = l->nonce;
    storeHandle(h, handleOut);
    *listenComm = l.release();
    return {};
  }

  Status connect(int device, void* handleBytes, void** sendComm) override {
    *sendComm = nullptr;
    HCL_TRY(checkDevice(device));
    Handle h = loadHandle(handleBytes);
    if (h.magic != kHandleMagic || h.family == 0) {
      return internalError("verbs connect: the listen handle is malformed or names no address");
    }
    auto* setup = static_cast<Setup*>(h.pending);
    if (setup && !pending_.contains(setup)) {
      return internalError("verbs connect: the handle names a connection this network is not setting up");
    }
    if (!setup) {
      auto fresh = std::make_unique<Setup>();
      fresh->comm = makeComm(ports_[static_cast<size_t>(device)], true);
      Comm& c = *fresh->comm;
      HCL_TRY(side::startConnect(h.family, h.ip, h.port, c.where(), &c.sideFd, &fresh->connected));
      HCL_TRY(createQueuePair(verbs_, *c.port, true, kMaxRequests, c.where(), &c.cq, &c.qp));
      fresh->describe(*c.qp, *c.port, h.nonce);
      setup = fresh.get();
      pending_[setup] = std::move(fresh);
      h.pending = setup;
      storeHandle(h, handleBytes);
    }
    Status s = advanceConnect(*setup);
    if (!s.ok() || setup->peerReady) {
      h.pending = nullptr;
      storeHandle(h, handleBytes);
      auto owned = std::move(pending_.at(setup));
      pending_.erase(setup);
      if (!s.ok()) return s;
      *sendComm = owned->comm.release();
    }
    return {};
  }

  // A connection that is not a peer's (a scanner, another job, a stale
  // nonce) or that breaks during setup is dropped, and accepting goes on:
  // the caller's deadline covers a peer that never comes.
  Status accept(void* listenComm, void** recvComm) override {
    *recvComm = nullptr;
    auto& l = *static_cast<Listener*>(listenComm);
    if (!l.accepting) {
      int fd = -1;
      HCL_TRY(side::accept(l.fd, fmt::format("verbs listener on {}", l.port->summary.name), &fd));
      if (fd < 0) return {};
      auto setup = std::make_unique<Setup>();
      setup->comm = makeComm(*l.port, false);
      setup->comm->sideFd = fd;
      setup->connected = true;
      l.accepting = std::move(setup);
    }
    Setup& s = *l.accepting;
    if (Status st = advanceAccept(s, l.nonce); !st.ok()) {
      log::warn(log::Net, "verbs listener on {}: dropped a connection: {}", l.port->summary.name, st.message());
      l.accepting.reset();
      return {};
    }
    if (s.peerReady && s.written == s.mineWire.size()) {
      *recvComm = s.comm.release();
      l.accepting.reset();
    }
    return {};
  }

  Status registerHost(void* commPtr, void* data, size_t bytes, void** mhandle) override {
    auto& c = *static_cast<Comm*>(commPtr);
    ibv_mr* mr = verbs_.regMr(c.port->pd, data, bytes, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) return errnoError(fmt::format("{}: ibv_reg_mr of {} bytes", c.where(), bytes), errno);
    *mhandle = mr;
    return {};
  }

  // After the comm closed too (closeCancelsRequests): the comm is not read.
  Status deregister(void* /*comm*/, void* mhandle) override {
    if (const int rc = verbs_.deregMr(static_cast<ibv_mr*>(mhandle)); rc != 0) return errnoError("verbs: ibv_dereg_mr", rc);
    return {};
  }

  // Destroying a queue pair flushes what is posted on it; nothing lands in
  // its buffers afterwards.
  bool closeCancelsRequests() const override { return true; }

  Status isend(void* commPtr, void* data, size_t bytes, int tag, void* mhandle, void** request) override {
    auto& c = *static_cast<Comm*>(commPtr);
    *request = nullptr;
    HCL_TRY(c.failure);
    Request* r = takeRequest(c);
    if (!r) return {};
    ibv_sge sge{reinterpret_cast<uint64_t>(data), static_cast<uint32_t>(bytes), static_cast<ibv_mr*>(mhandle)->lkey};
    ibv_send_wr wr{};
    wr.wr_id = reinterpret_cast<uint64_t>(r);
    wr.sg_list = bytes > 0 ? &sge : nullptr;
    wr.num_sge = bytes > 0 ? 1 : 0;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(static_cast<uint32_t>(tag));
    r->sending = true;
    r->tag = static_cast<uint32_t>(tag);
    r->bytes = bytes;
    r->sequence = c.sendsPosted;
    ibv_send_wr* bad = nullptr;
    if (const int rc = VerbsApi::postSend(c.qp, &wr, &bad); rc != 0) {
      dropRequest(*r);
      return errnoError(c.where() + ": ibv_post_send", rc);
    }
    ++c.sendsPosted;
    *request = r;
    return {};
  }

  Status irecv(void* commPtr, void* data, size_t bytes, int tag, void* mhandle, void** request) override {
    auto& c = *static_cast<Comm*>(commPtr);
    *request = nullptr;
    HCL_TRY(c.failure);
    Request* r = takeRequest(c);
    if (!r) return {};
    ibv_sge sge{reinterpret_cast<uint64_t>(data), static_cast<uint32_t>(bytes), static_cast<ibv_mr*>(mhandle)->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = reinterpret_cast<uint64_t>(r);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    r->sending = false;
    r->tag = static_cast<uint32_t>(tag);
    r->bytes = 0;
    ibv_recv_wr* bad = nullptr;
    if (const int rc = VerbsApi::postRecv(c.qp, &wr, &bad); rc != 0) {
      dropRequest(*r);
      return errnoError(c.where() + ": ibv_post_recv", rc);
    }
    *request = r;
    return {};
  }

  Status test(void* request, bool* done, size_t* bytes) override {
    auto& r = *static_cast<Request*>(request);
    Comm& c = *r.comm;
    *done = false;
    if (!r.done) poll(c);
    const bool failedSend = r.done && r.sending && !r.error.ok();
    if ((!r.done || failedSend) && peerGone(c, failedSend)) settleAtPeersClose(c, r);
    if (failedSend && !r.error.ok() && !c.peerClosed && awaitingClosingRecord(r)) return {};
    if (!r.done) return c.failure;
    *done = true;
    if (bytes) *bytes = r.bytes;
    Status result = std::move(r.error);
    dropRequest(r);
    return result;
  }

  // Fails where the queue pair could not be destroyed: the HCA may then
  // still write into the comm's buffers, which the caller must keep.
  Status closeSend(void* comm) override { return close(comm); }
  Status closeRecv(void* comm) override {
    writeClosingRecord(*static_cast<Comm*>(comm));
    return close(comm);
  }
  Status closeListen(void* listenComm) override {
    std::unique_ptr<Listener> owned(static_cast<Listener*>(listenComm));
    return {};
  }

 private:
  Status close(void* commPtr) const {
    std::unique_ptr<Comm> c(static_cast<Comm*>(commPtr));
    const std::string where = c->where();
    if (c->qp) {
      const int rc = verbs_.destroyQp(c->qp);
      c->qp = nullptr;
      if (rc != 0) {
        // The completion queue stays too: the queue pair may still use it.
        c->cq = nullptr;
        return errnoError(where + ": ibv_destroy_qp", rc);
      }
    }
    return {};
  }

  Status checkDevice(int device) const {
    if (device >= 0 && static_cast<size_t>(device) < ports_.size()) return {};
    return internalError(fmt::format("verbs: no device {} (this rank has {} ports)", device, ports_.size()));
  }

  std::unique_ptr<Comm> makeComm(const IbPort& port, bool sending) const {
    auto c = std::make_unique<Comm>();
    c->verbs = &verbs_;
    c->port = &port;
    c->sending = sending;
    for (Request& r : c->requests) r.comm = c.get();
    return c;
  }

  Status advanceConnect(Setup& s) const {
    Comm& c = *s.comm;
    if (!s.connected) HCL_TRY(side::checkConnect(c.sideFd, c.where(), &s.connected));
    if (!s.connected) return {};
    HCL_TRY(sendMine(s));
    HCL_TRY(side::receiveSome(c.sideFd, s.in.data(), s.in.size(), &s.read, c.where()));
    if (s.read < s.in.size()) return {};
    const QpInfo peer = decodeQpInfo(s.in);
    if (peer.magic != kQpInfoMagic || peer.nonce != s.mine.nonce) {
      return systemError(c.where() + ": the listener answered with a malformed or foreign queue pair");
    }
    HCL_TRY(connectQueuePair(verbs_, c.qp, *c.port, settings_, s.mine, peer, c.where()));
    s.peerReady = true;
    return {};
  }

  // The listener's side: the connector's info first, then this end's queue
  // pair is made ready to receive before it answers, so the connector
  // never sends into a queue pair that cannot take it.
  Status advanceAccept(Setup& s, uint64_t nonce) const {
    Comm& c = *s.comm;
    if (!s.peerReady) {
      HCL_TRY(side::receiveSome(c.sideFd, s.in.data(), s.in.size(), &s.read, c.where()));
      if (s.read < s.in.size()) return {};
      const QpInfo peer = decodeQpInfo(s.in);
      if (peer.magic != kQpInfoMagic || peer.nonce != nonce) {
        return systemError(c.where() + ": a connection for another listener or another program arrived");
      }
      HCL_TRY(createQueuePair(verbs_, *c.port, false, kMaxRequests, c.where(), &c.cq, &c.qp));
      s.describe(*c.qp, *c.port, nonce);
      HCL_TRY(connectQueuePair(verbs_, c.qp, *c.port, settings_, s.mine, peer, c.where()));
      s.peerReady = true;
    }
    return sendMine(s);
  }

  // What is left of this end's QpInfo to the peer.
  static Status sendMine(Setup& s) {
    return side::sendSome(s.comm->sideFd, s.mineWire.data(), s.mineWire.size(), &s.written,
                    s.comm->where());
  }

  // A free request of the comm, or null when all are in flight.
  static Request* takeRequest(Comm& c) {
    for (Request& r : c.requests) {
      if (r.inUse) continue;
      r.inUse = true;
      r.done = false;
      r.error = {};
      r.failureSeen = {};
      return &r;
    }
    return nullptr;
  }

  static void dropRequest(Request& r) { r.inUse = false; }

  void poll(Comm& c) const {
    ibv_wc wcs[16];
    for (;;) {
      const int n = VerbsApi::pollCq(c.cq, 16, wcs);
      if (n < 0) {
        if (c.failure.ok()) c.failure = systemError(c.where() + ": ibv_poll_cq failed");
        return;
      }
      for (int i = 0; i < n; ++i) complete(c, wcs[i]);
      if (n < 16) return;
    }
  }

  void complete(Comm& c, const ibv_wc& wc) const {
    if (wc.status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV)) ++c.receivesDelivered;
    auto* r = reinterpret_cast<Request*>(wc.wr_id);
    if (!r || r->comm != &c || !r->inUse) return;
    r->done = true;
    if (wc.status != IBV_WC_SUCCESS) {
      r->error = remoteError(fmt::format("{}: work request failed: {} ({})", c.where(),
                                         verbs_.wcStatusText(wc.status), static_cast<int>(wc.status)));
      if (c.failure.ok()) c.failure = r->error;
      return;
    }
    if (r->sending) return;
    r->bytes = wc.byte_len;
    const uint32_t tag = (wc.wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc.imm_data) : ~r->tag;
    if (tag != r->tag) {
      r->error = internalError(fmt::format("{}: a message with tag {} arrived for a receive of tag {}", c.where(), tag,
                                           r->tag));
    }
  }

  // The side connection carries the peer's closing record, reads
  // end-of-file or breaks once the peer's end of the link is gone. Looked at
  // no more than once a millisecond unless `now`.
  static bool peerGone(Comm& c, bool now) {
    if (c.peerClosed) return true;
    if (!now) {
      const Clock::time_point t = Clock::now();
      if (t < c.nextPeerCheck) return false;
      c.nextPeerCheck = t + kPeerCheckEvery;
    }
    c.peerClosed = side::peerClosing(c.sideFd, c.closingRecord.data(), c.closingRecord.size(), &c.closingRecordRead);
    if (c.peerClosed && c.failure.ok()) {
      c.failure = remoteError(c.where() + ": the peer closed its side of the link (process gone?)");
    }
    return c.peerClosed;
  }

  // Once the peer is gone. A send the peer's receive comm counted as
  // delivered when it closed succeeded, even if its acknowledgement never
  // came (lost, or the queue pair destroyed before sending it). Anything
  // else still pending fails; what arrived before the close still counts.
  void settleAtPeersClose(Comm& c, Request& r) const {
    poll(c);
    if (!r.sending || c.closingRecordRead < c.closingRecord.size()) return;
    if (r.sequence < loadLittleEndian<uint64_t>(c.closingRecord.data())) {
      r.done = true;
      r.error = {};
    }
  }

  // A send that failed while the side connection is still open may yet be
  // settled by the peer's closing record: it stays pending a while.
  static bool awaitingClosingRecord(Request& r) {
    const Clock::time_point now = Clock::now();
    if (r.failureSeen == Clock::time_point{}) r.failureSeen = now;
    return now - r.failureSeen < kClosingRecordWait;
  }

  // Tells the sending peer how many of its messages arrived, taking the
  // completions that came before. Best effort: a peer that went away needs
  // no record, and 8 bytes fit in any socket buffer.
  void writeClosingRecord(Comm& c) const {
    if (c.sideFd < 0 || !c.qp || !c.cq) return;
    poll(c);
    std::array<uint8_t, sizeof(uint64_t)> record{};
    storeLittleEndian(record.data(), c.receivesDelivered);
    (void)::send(c.sideFd, record.data(), record.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  const VerbsApi& verbs_;
  IbSettings settings_;
  std::vector<IbPort> ports_;
  std::vector<IbPortSummary> summaries_;
  std::string name_ = "verbs";
  std::map<Setup*, std::unique_ptr<Setup>> pending_;  // connects under way; dropped with the network
};

}  // namespace

IbSettings readIbSettings() {
  IbSettings s;
  if (const ParamValue lib = resolveParam("HCL_IBVERBS_LIBRARY"); !lib.text.empty()) s.library = lib.text;
  s.hcaText = resolveParam("HCL_IB_HCA").text;
  s.gidIndex = static_cast<int>(paramInt("HCL_IB_GID_INDEX"));
  s.timeout = static_cast<int>(paramInt("HCL_IB_TIMEOUT"));
  s.retryCount = static_cast<int>(paramInt("HCL_IB_RETRY_CNT"));
  s.serviceLevel = static_cast<int>(paramInt("HCL_IB_SL"));
  s.trafficClass = static_cast<int>(paramInt("HCL_IB_TC"));
  return s;
}

std::unique_ptr<IbNet> IbNet::open(const IbSettings& settings, std::string* why) {
  const VerbsApi* verbs = loadVerbs(settings.library, why);
  if (!verbs) return nullptr;
  std::vector<IbPort> ports;
  if (Status s = findIbPorts(*verbs, settings, ports); !s.ok()) {
    if (why) *why = s.message();
    return nullptr;
  }
  return std::make_unique<IbNetImpl>(*verbs, settings, std::move(ports));
}

uint16_t handleSidePort(const void* handleBytes) {
  const Handle h = loadHandle(handleBytes);
  return h.magic == kHandleMagic ? h.port : 0;
}

bool setHandleAddress(void* handleBytes, const std::string& ip) {
  Handle h = loadHandle(handleBytes);
  if (h.magic != kHandleMagic) return false;
  if (inet_pton(AF_INET, ip.c_str(), h.ip) == 1) {
    h.family = 4;
  } else if (inet_pton(AF_INET6, ip.c_str(), h.ip) == 1) {
    h.family = 6;
  } else {
    return false;
  }
  storeHandle(h, handleBytes);
  return true;
}

}  // namespace hcl::ib
