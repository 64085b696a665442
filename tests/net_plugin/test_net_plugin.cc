// A test-only NCCL network plugin ("hcltest") over loopback TCP, built once
// per ABI version (HCL_TEST_NET_VERSION = 8, 9, 10 or 11); each build exports one
// table, ncclNetPlugin_vN. It is strict where real plugins are strict and
// adds quirks that make a caller's retry paths run:
//  - connect() returns success with no comm on its first call for a handle;
//  - every other isend() on a comm returns success with no request;
//  - a listen comm accepts one connection; another accept() is invalid usage;
//  - isend/irecv need a buffer inside a region registered on that comm;
//  - at most 8 requests in flight per comm, and irecv takes one buffer only;
//  - under HCL_TEST_NET_STRICT_CLOSE=1, closing a comm with requests in
//    flight aborts the process.
// Messages are an 8-byte length then the payload; each comm is FIFO.
#include "transports/net_plugin/net_plugin_abi.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <type_traits>
#include <unordered_set>

#ifndef HCL_TEST_NET_VERSION
#error "define HCL_TEST_NET_VERSION as 8, 9, 10 or 11"
#endif

#define HCLTEST_EXPORT __attribute__((visibility("default")))

namespace {

using namespace hcl::netabi;

constexpr Result kSystemError = 2;
constexpr Result kInternalError = 3;
constexpr Result kInvalidArgument = 4;
constexpr Result kInvalidUsage = 5;

constexpr uint64_t kMagic = 0x48434c544e455431ull;  // "HCLTNET1"
constexpr int kDevices = 2;
constexpr size_t kMaxInFlight = 8;
constexpr int kLogInfo = 3;               // NCCL_LOG_INFO
constexpr unsigned long kLogInitFlag = 1;  // NCCL_INIT

// What listen() writes into the caller's handle; connect() keeps its own
// progress (stage, socket) in the caller's copy.
struct Handle {
  uint64_t magic;
  uint16_t port;
  int32_t dev;
  int32_t stage;  // 0: no connect started, 1: a connect is in flight on fd
  int32_t fd;
};
static_assert(sizeof(Handle) <= kHandleBytes);

struct Request;

struct Region {
  uintptr_t base;
  size_t size;
};

struct Comm {
  int fd;
  int dev;
  bool send;
  std::unordered_set<Region*> regions;
  std::deque<Request*> queue;  // post order; a request leaves when test() reports it done
  unsigned long isendCalls = 0;
  Result error = kSuccess;  // sticky once the connection failed
};

struct Request {
  Comm* comm;
  char* data;
  size_t size;      // send: the message; recv: the posted size, then the message's
  uint64_t header;  // the message length on the wire
  size_t headerDone = 0;
  size_t dataDone = 0;
  bool done = false;
};

struct Listen {
  int fd;
  int dev;
  bool accepted = false;
};

std::mutex gMutex;
DebugLogger gLogger = nullptr;
std::unordered_set<Listen*> gListens;
std::unordered_set<Comm*> gComms;
std::unordered_set<Request*> gRequests;

// Every entry point: one lock, and no exception leaves through the C ABI.
template <class F>
Result guarded(F&& f) noexcept {
  try {
    std::lock_guard<std::mutex> lock(gMutex);
    return f();
  } catch (...) {
    std::fputs("hcltest net plugin: unexpected exception\n", stderr);
    return kInternalError;
  }
}

Result fail(Result r, const char* what) {
  std::fprintf(stderr, "hcltest net plugin: %s\n", what);
  return r;
}

size_t maxBytes() {
  if (const char* s = std::getenv("HCL_TEST_NET_MAX_BYTES")) {
    unsigned long long v = std::strtoull(s, nullptr, 10);
    if (v > 0) return static_cast<size_t>(v);
  }
  return size_t{1} << 30;
}

bool validDev(int dev) { return dev >= 0 && dev < kDevices; }

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Comm* newComm(int fd, int dev, bool send) {
  setNoDelay(fd);
  auto* c = new Comm{fd, dev, send, {}, {}};
  gComms.insert(c);
  return c;
}

Comm* liveComm(void* p) {
  auto* c = static_cast<Comm*>(p);
  return gComms.count(c) ? c : nullptr;
}

void freeComm(Comm* c) {
  ::close(c->fd);
  for (Request* r : c->queue) {
    gRequests.erase(r);
    delete r;
  }
  for (Region* m : c->regions) delete m;
  gComms.erase(c);
  delete c;
}

// --- progress ---------------------------------------------------------------

bool wouldBlock(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// HCL_TEST_NET_HIDE_PEER_END=1: a broken connection is never reported and
// its requests stay pending, as on networks that do not notice a peer's
// process ending (libfabric's tcp;ofi_rxm, for one).
bool hidePeerEnd() {
  static const bool hide = std::getenv("HCL_TEST_NET_HIDE_PEER_END") != nullptr;
  return hide;
}

Result broken(Comm* c, const char* what, int err) {
  if (hidePeerEnd()) return kSuccess;
  std::fprintf(stderr, "hcltest net plugin: %s (%s)\n", what, std::strerror(err));
  c->error = kSystemError;
  return kSystemError;
}

// Writes the request's header and payload; true once all of it is sent.
bool advanceSend(Comm* c, Request* r) {
  while (r->headerDone < sizeof r->header || r->dataDone < r->size) {
    iovec iov[2];
    int n = 0;
    if (r->headerDone < sizeof r->header)
      iov[n++] = {reinterpret_cast<char*>(&r->header) + r->headerDone, sizeof r->header - r->headerDone};
    if (r->dataDone < r->size) iov[n++] = {r->data + r->dataDone, r->size - r->dataDone};
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = n;
    ssize_t k = ::sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (!wouldBlock(errno)) broken(c, "send failed", errno);
      return false;
    }
    size_t h = std::min(static_cast<size_t>(k), sizeof r->header - r->headerDone);
    r->headerDone += h;
    r->dataDone += static_cast<size_t>(k) - h;
  }
  return r->done = true;
}

// Reads the header, then exactly that many bytes; true once all arrived.
bool advanceRecv(Comm* c, Request* r) {
  for (;;) {
    bool inHeader = r->headerDone < sizeof r->header;
    if (!inHeader && r->dataDone == r->size) return r->done = true;
    char* dst = inHeader ? reinterpret_cast<char*>(&r->header) + r->headerDone : r->data + r->dataDone;
    size_t want = inHeader ? sizeof r->header - r->headerDone : r->size - r->dataDone;
    ssize_t k = ::recv(c->fd, dst, want, MSG_DONTWAIT);
    if (k == 0) {
      broken(c, "peer closed the connection with a receive pending", ECONNRESET);
      return false;
    }
    if (k < 0) {
      if (errno == EINTR) continue;
      if (!wouldBlock(errno)) broken(c, "receive failed", errno);
      return false;
    }
    if (!inHeader) {
      r->dataDone += static_cast<size_t>(k);
      continue;
    }
    r->headerDone += static_cast<size_t>(k);
    if (r->headerDone < sizeof r->header) continue;
    if (r->header > r->size) {
      std::fprintf(stderr, "hcltest net plugin: incoming message of %llu bytes exceeds the posted receive of %zu "
                   "bytes\n", static_cast<unsigned long long>(r->header), r->size);
      c->error = kInternalError;
      return false;
    }
    r->size = static_cast<size_t>(r->header);
  }
}

// Moves the comm's unfinished requests along, oldest first, until one blocks.
void progress(Comm* c) {
  for (Request* r : c->queue) {
    if (r->done) continue;
    if (c->error != kSuccess) return;
    if (!(c->send ? advanceSend(c, r) : advanceRecv(c, r))) return;
  }
}

// --- the operations, under the lock -------------------------------------------

Result doInit(DebugLogger logger) {
  gLogger = logger;
  if (gLogger)
    gLogger(kLogInfo, kLogInitFlag, __FILE__, __LINE__, "hcltest net plugin v%d: %d loopback devices",
            HCL_TEST_NET_VERSION, kDevices);
  return kSuccess;
}

template <class P>
Result doGetProperties(int dev, P* p) {
  static const char* const kNames[kDevices] = {"hcltest0", "hcltest1"};
  if (!validDev(dev) || !p) return kInvalidArgument;
  *p = P{};
  p->name = const_cast<char*>(kNames[dev]);
  p->pciPath = nullptr;
  p->guid = static_cast<uint64_t>(dev) + 1;
  p->ptrSupport = kPtrHost;
  p->regIsGlobal = 0;
  p->speed = 10000;
  p->port = 1;
  p->latency = 0;
  p->maxComms = 65536;
  p->maxRecvs = 1;
  p->netDeviceType = 0;
  p->netDeviceVersion = 0;
  if constexpr (!std::is_same_v<P, Properties_v8>) {
    p->forceFlush = 0;
    p->vProps.ndevs = 1;
    p->vProps.devs[0] = dev;
    p->maxP2pBytes = p->maxCollBytes = maxBytes();
  }
  if constexpr (std::is_same_v<P, Properties_v11>) p->maxMultiRequestSize = 1;
  return kSuccess;
}

Result doListen(int dev, void* handle, void** listenComm) {
  if (!validDev(dev) || !handle || !listenComm) return kInvalidArgument;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(kSystemError, "socket() failed");
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return fail(kSystemError, "cannot listen on 127.0.0.1");
  }
  Handle h{kMagic, ntohs(a.sin_port), dev, 0, -1};
  std::memset(handle, 0, kHandleBytes);
  std::memcpy(handle, &h, sizeof h);
  auto* l = new Listen{fd, dev};
  gListens.insert(l);
  *listenComm = l;
  return kSuccess;
}

Result doConnect(int dev, void* handle, void** sendComm, DeviceHandle** sendDevComm) {
  if (!validDev(dev) || !handle || !sendComm) return kInvalidArgument;
  *sendComm = nullptr;
  if (sendDevComm) *sendDevComm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof h);
  if (h.magic != kMagic) return fail(kInvalidArgument, "connect: the handle's magic is wrong");
  if (h.stage == 0) {  // start; the first call never returns a comm
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(kSystemError, "socket() failed");
    sockaddr_in a = loopback(h.port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
      ::close(fd);
      return fail(kSystemError, "connect() failed");
    }
    h.stage = 1;
    h.fd = fd;
    std::memcpy(handle, &h, sizeof h);
    return kSuccess;
  }
  if (h.stage != 1) return fail(kInvalidArgument, "connect: the handle's state is corrupt");
  pollfd p{h.fd, POLLOUT, 0};
  int k = ::poll(&p, 1, 0);
  if (k == 0 || (k < 0 && errno == EINTR)) return kSuccess;  // not yet
  int err = 0;
  socklen_t len = sizeof err;
  if (k < 0 || ::getsockopt(h.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno ? errno : EIO;
  int fd = h.fd;
  h.stage = 0;  // a later connect on this handle starts afresh
  h.fd = -1;
  std::memcpy(handle, &h, sizeof h);
  if (err != 0) {
    ::close(fd);
    std::fprintf(stderr, "hcltest net plugin: connect to port %u failed (%s)\n", h.port, std::strerror(err));
    return kSystemError;
  }
  *sendComm = newComm(fd, dev, true);
  return kSuccess;
}

Result doAccept(void* listenComm, void** recvComm, DeviceHandle** recvDevComm) {
  auto* l = static_cast<Listen*>(listenComm);
  if (!gListens.count(l) || !recvComm) return kInvalidArgument;
  *recvComm = nullptr;
  if (recvDevComm) *recvDevComm = nullptr;
  if (l->accepted) return fail(kInvalidUsage, "accept: this listen comm already accepted its one connection");
  int fd = ::accept4(l->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (wouldBlock(errno) || errno == EINTR || errno == ECONNABORTED) return kSuccess;
    return fail(kSystemError, "accept4() failed");
  }
  l->accepted = true;
  *recvComm = newComm(fd, l->dev, false);
  return kSuccess;
}

Result doRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  Comm* c = liveComm(comm);
  if (!c || !mhandle) return kInvalidArgument;
  if (type != kPtrHost) return fail(kInvalidArgument, "regMr: only host memory (NCCL_PTR_HOST) is supported");
  auto* m = new Region{reinterpret_cast<uintptr_t>(data), size};
  c->regions.insert(m);
  *mhandle = m;
  return kSuccess;
}

Result doDeregMr(void* comm, void* mhandle) {
  Comm* c = liveComm(comm);
  auto* m = static_cast<Region*>(mhandle);
  if (!c || !c->regions.count(m)) return fail(kInvalidArgument, "deregMr: the handle is not registered on this comm");
  c->regions.erase(m);
  delete m;
  return kSuccess;
}

// A request's buffer must lie inside a region registered on its comm.
Result checkBuffer(Comm* c, void* data, size_t size, void* mhandle, const char* op) {
  auto* m = static_cast<Region*>(mhandle);
  if (!m || !c->regions.count(m)) {
    std::fprintf(stderr, "hcltest net plugin: %s: memory handle %p is not registered on this comm\n", op, mhandle);
    return kInternalError;
  }
  uintptr_t p = reinterpret_cast<uintptr_t>(data);
  if (size > 0 && (p < m->base || p - m->base > m->size || size > m->size - (p - m->base))) {
    std::fprintf(stderr, "hcltest net plugin: %s: buffer [%p, +%zu) is outside its registered region [%p, +%zu)\n",
                 op, data, size, reinterpret_cast<void*>(m->base), m->size);
    return kInternalError;
  }
  return kSuccess;
}

Result post(Comm* c, void* data, size_t size, void** request) {
  auto* r = new Request{c, static_cast<char*>(data), size, size};
  c->queue.push_back(r);
  gRequests.insert(r);
  *request = r;
  return kSuccess;
}

Result doIsend(void* sendComm, void* data, size_t size, void* mhandle, void** request) {
  Comm* c = liveComm(sendComm);
  if (!c || !c->send || !request) return kInvalidArgument;
  *request = nullptr;
  if (size > maxBytes()) return fail(kInvalidArgument, "isend: size above maxP2pBytes");
  if (Result e = checkBuffer(c, data, size, mhandle, "isend")) return e;
  if (c->queue.size() >= kMaxInFlight) return fail(kInternalError, "isend: more than 8 requests in flight on a comm");
  if (++c->isendCalls % 2 == 1) return kSuccess;  // quirk: "would block", try again
  return post(c, data, size, request);
}

Result doIrecv(void* recvComm, int n, void** data, size_t size, void** mhandles, void** request) {
  Comm* c = liveComm(recvComm);
  if (!c || c->send || !request || !data || !mhandles) return kInvalidArgument;
  *request = nullptr;
  if (n != 1) return fail(kInvalidArgument, "irecv: only one receive at a time (maxRecvs 1)");
  if (Result e = checkBuffer(c, data[0], size, mhandles[0], "irecv")) return e;
  if (c->queue.size() >= kMaxInFlight) return fail(kInternalError, "irecv: more than 8 requests in flight on a comm");
  return post(c, data[0], size, request);
}

Result doTest(void* request, int* done, int* size) {
  auto* r = static_cast<Request*>(request);
  if (!gRequests.count(r) || !done) return fail(kInvalidArgument, "test: unknown request");
  Comm* c = r->comm;
  if (!r->done) progress(c);
  if (!r->done) {
    *done = 0;
    return c->error;
  }
  *done = 1;
  if (size) *size = static_cast<int>(r->size);
  c->queue.erase(std::find(c->queue.begin(), c->queue.end(), r));
  gRequests.erase(r);
  delete r;
  return kSuccess;
}

Result doClose(void* comm, bool send) {
  if (!comm) return kSuccess;
  Comm* c = liveComm(comm);
  if (!c || c->send != send) return fail(kInvalidArgument, "close: unknown comm");
  // Some plugins (aws-ofi-nccl) refuse to close a comm with requests in
  // flight; under HCL_TEST_NET_STRICT_CLOSE=1 this one ends the process.
  if (!c->queue.empty() && std::getenv("HCL_TEST_NET_STRICT_CLOSE")) {
    std::fprintf(stderr, "hcltest net plugin: %s comm closed with %zu requests in flight\n", send ? "send" : "receive",
                 c->queue.size());
    std::abort();
  }
  freeComm(c);
  return kSuccess;
}

Result doCloseListen(void* listenComm) {
  auto* l = static_cast<Listen*>(listenComm);
  if (!l) return kSuccess;
  if (!gListens.count(l)) return fail(kInvalidArgument, "closeListen: unknown listen comm");
  ::close(l->fd);
  gListens.erase(l);
  delete l;
  return kSuccess;
}

// --- entry points shared by all versions ---------------------------------------

Result devices(int* n) {
  return guarded([&] {
    if (!n) return kInvalidArgument;
    *n = kDevices;
    return kSuccess;
  });
}
#if HCL_TEST_NET_VERSION < 11
Result listenEntry(int dev, void* h, void** l) { return guarded([&] { return doListen(dev, h, l); }); }
#endif
Result acceptEntry(void* l, void** c, DeviceHandle** d) { return guarded([&] { return doAccept(l, c, d); }); }
Result regMr(void* c, void* p, size_t n, int t, void** m) { return guarded([&] { return doRegMr(c, p, n, t, m); }); }
Result deregMr(void* c, void* m) { return guarded([&] { return doDeregMr(c, m); }); }
Result test(void* r, int* d, int* n) { return guarded([&] { return doTest(r, d, n); }); }
Result closeSend(void* c) { return guarded([&] { return doClose(c, true); }); }
Result closeRecv(void* c) { return guarded([&] { return doClose(c, false); }); }
Result closeListen(void* l) { return guarded([&] { return doCloseListen(l); }); }
#if HCL_TEST_NET_VERSION < 10
Result connectEntry(int dev, void* h, void** c, DeviceHandle** d) {
  return guarded([&] { return doConnect(dev, h, c, d); });
}
#endif

}  // namespace

#if HCL_TEST_NET_VERSION == 8

namespace {
Result init8(DebugLogger l) { return guarded([&] { return doInit(l); }); }
Result props8(int dev, Properties_v8* p) { return guarded([&] { return doGetProperties(dev, p); }); }
Result isend8(void* c, void* p, int n, int, void* m, void** r) {
  return guarded([&] { return n < 0 ? kInvalidArgument : doIsend(c, p, static_cast<size_t>(n), m, r); });
}
Result irecv8(void* c, int n, void** p, int* sizes, int*, void** m, void** r) {
  return guarded([&] {
    if (!sizes || sizes[0] < 0) return kInvalidArgument;
    return doIrecv(c, n, p, static_cast<size_t>(sizes[0]), m, r);
  });
}
}  // namespace

extern "C" HCLTEST_EXPORT Net_v8 ncclNetPlugin_v8;
Net_v8 ncclNetPlugin_v8 = {
    .name = "hcltest",
    .init = init8,
    .devices = devices,
    .getProperties = props8,
    .listen = listenEntry,
    .connect = connectEntry,
    .accept = acceptEntry,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isend8,
    .irecv = irecv8,
    .iflush = nullptr,
    .test = test,
    .closeSend = closeSend,
    .closeRecv = closeRecv,
    .closeListen = closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
};

#elif HCL_TEST_NET_VERSION == 9

namespace {
Result init9(DebugLogger l) { return guarded([&] { return doInit(l); }); }
Result props9(int dev, Properties_v9* p) { return guarded([&] { return doGetProperties(dev, p); }); }
Result isend9(void* c, void* p, size_t n, int, void* m, void** r) {
  return guarded([&] { return doIsend(c, p, n, m, r); });
}
Result irecv9(void* c, int n, void** p, size_t* sizes, int*, void** m, void** r) {
  return guarded([&] { return sizes ? doIrecv(c, n, p, sizes[0], m, r) : kInvalidArgument; });
}
}  // namespace

extern "C" HCLTEST_EXPORT Net_v9 ncclNetPlugin_v9;
Net_v9 ncclNetPlugin_v9 = {
    .name = "hcltest",
    .init = init9,
    .devices = devices,
    .getProperties = props9,
    .listen = listenEntry,
    .connect = connectEntry,
    .accept = acceptEntry,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isend9,
    .irecv = irecv9,
    .iflush = nullptr,
    .test = test,
    .closeSend = closeSend,
    .closeRecv = closeRecv,
    .closeListen = closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};

#elif HCL_TEST_NET_VERSION == 10

namespace {
Result init10(DebugLogger l, ProfilerCallback) { return guarded([&] { return doInit(l); }); }
Result props10(int dev, Properties_v9* p) { return guarded([&] { return doGetProperties(dev, p); }); }
Result connect10(int dev, CommConfig_v10*, void* h, void** c, DeviceHandle** d) {
  return guarded([&] { return doConnect(dev, h, c, d); });
}
Result isend10(void* c, void* p, size_t n, int, void* m, void*, void** r) {
  return guarded([&] { return doIsend(c, p, n, m, r); });
}
Result irecv10(void* c, int n, void** p, size_t* sizes, int*, void** m, void**, void** r) {
  return guarded([&] { return sizes ? doIrecv(c, n, p, sizes[0], m, r) : kInvalidArgument; });
}
}  // namespace

extern "C" HCLTEST_EXPORT Net_v10 ncclNetPlugin_v10;
Net_v10 ncclNetPlugin_v10 = {
    .name = "hcltest",
    .init = init10,
    .devices = devices,
    .getProperties = props10,
    .listen = listenEntry,
    .connect = connect10,
    .accept = acceptEntry,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isend10,
    .irecv = irecv10,
    .iflush = nullptr,
    .test = test,
    .closeSend = closeSend,
    .closeRecv = closeRecv,
    .closeListen = closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};

#elif HCL_TEST_NET_VERSION == 11

namespace {
// The context init hands out; listen and connect refuse any other.
int gContext = 0;

Result init11(void** ctx, uint64_t, CommConfig_v10*, DebugLogger l, ProfilerCallback) {
  return guarded([&] {
    if (!ctx) return kInvalidArgument;
    *ctx = &gContext;
    return doInit(l);
  });
}
Result props11(int dev, Properties_v11* p) { return guarded([&] { return doGetProperties(dev, p); }); }
Result listen11(void* ctx, int dev, void* h, void** l) {
  return guarded([&] { return ctx == &gContext ? doListen(dev, h, l) : fail(kInvalidArgument, "listen: unknown context"); });
}
Result connect11(void* ctx, int dev, void* h, void** c, DeviceHandle** d) {
  return guarded(
      [&] { return ctx == &gContext ? doConnect(dev, h, c, d) : fail(kInvalidArgument, "connect: unknown context"); });
}
Result isend11(void* c, void* p, size_t n, int, void* m, void*, void** r) {
  return guarded([&] { return doIsend(c, p, n, m, r); });
}
Result irecv11(void* c, int n, void** p, size_t* sizes, int*, void** m, void**, void** r) {
  return guarded([&] { return sizes ? doIrecv(c, n, p, sizes[0], m, r) : kInvalidArgument; });
}
Result finalize11(void*) { return kSuccess; }
}  // namespace

extern "C" HCLTEST_EXPORT Net_v11 ncclNetPlugin_v11;
Net_v11 ncclNetPlugin_v11 = {
    .name = "hcltest",
    .init = init11,
    .devices = devices,
    .getProperties = props11,
    .listen = listen11,
    .connect = connect11,
    .accept = acceptEntry,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isend11,
    .irecv = irecv11,
    .iflush = nullptr,
    .test = test,
    .closeSend = closeSend,
    .closeRecv = closeRecv,
    .closeListen = closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
    .finalize = finalize11,
    .setNetAttr = nullptr,
};

#else
#error "HCL_TEST_NET_VERSION must be 8, 9, 10 or 11"
#endif
