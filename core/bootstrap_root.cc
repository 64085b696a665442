#include "core/bootstrap_root.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/bootstrap_socket.h"
#include "core/socket_fd.h"
#include "core/deadline.h"
#include "core/log.h"
#include "core/no_throw.h"
#include "core/params.h"

namespace hcl {
namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;
using bootwire::ErrorKind;
using bootwire::Kind;

// A connection that has not presented a complete hello by then is dropped.
constexpr auto kHelloTimeout = 10s;
// How long the root keeps trying to deliver its last messages before exiting.
constexpr auto kFlushTimeout = 2s;
// How long the root stops listening after accept() failed.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
constexpr size_t kReadChunk = 64 * 1024;
// The largest frame the root makes room for before its bytes arrive.
constexpr uint64_t kReserveAheadBytes = uint64_t{64} << 20;
constexpr size_t kMaxListedRanks = 32;

// Owns an eventfd that wakes the root thread when it must stop.
class StopSignal {
 public:
  StopSignal() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), error_(fd_ < 0 ? errno : 0) {}
  ~StopSignal() {
    if (fd_ >= 0) ::close(fd_);
  }
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int error() const { return error_; }  // errno of a failed eventfd()
  void raise() const {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof(one));
  }

 private:
  int fd_;
  int error_;
};

using Buffer = std::shared_ptr<const std::vector<uint8_t>>;

struct Conn {
  Conn(tcp::socket s, std::string p) : socket(std::move(s)), peer(std::move(p)), since(Clock::now()) {}

  bool hasOutput() const { return !out.empty(); }

  tcp::socket socket;
  std::string peer;
  Clock::time_point since;                  // accepted at, or rejected at once closing
  int rank = -1;                            // set once its hello is admitted
  std::vector<uint8_t> in;                  // bytes received and not consumed yet
  std::deque<Buffer> out;                   // frames still to send (shared between ranks)
  size_t outPos = 0;                        // bytes of out.front() already sent
  std::optional<std::vector<uint8_t>> blob; // this round's contribution
  bool routed = false;                      // the contribution holds a part for each rank (Kind::Route)
  bool closeWhenFlushed = false;
  bool notified = false;  // was sent an error; its departure is expected
  bool closed = false;
};

enum class Phase { Joining, Running, Finishing };

class RootServer {
 public:
  static Status create(const asio::ip::address& ip, uint16_t port, const bootwire::Secret& secret,
                       int64_t joinTimeoutMs, std::unique_ptr<RootServer>& out, bool* addressInUse);
  RootServer(const bootwire::Secret& secret, int64_t joinTimeoutMs)
      : acceptor_(io_), secret_(secret), joinTimeoutMs_(joinTimeoutMs), ownerPid_(::getpid()), thread_() {}
  ~RootServer();
  RootServer(const RootServer&) = delete;
  RootServer& operator=(const RootServer&) = delete;

  uint16_t port() const { return port_; }
  // What the thread needs before any rank connects is made here, in the
  // caller: a program that forks right after hclGetUniqueId (one process per
  // rank) must not catch the thread inside the allocator or the logger,
  // whose locks the child would inherit held.
  void start() {
    log::info(log::Bootstrap, "bootstrap root listening on {}", address_);
    pollFds_.reserve(64);  // the idle loop polls two descriptors
    polledConns_.reserve(64);
    thread_ = std::thread([this] { run(); });
  }
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // A forked child inherits the object but not the thread.
  bool runsInThisProcess() const { return ownerPid_ == ::getpid(); }
  bool serves(uint16_t port, const bootwire::Secret& secret) const { return port_ == port && secret_ == secret; }
  void stop() { stop_.raise(); }

 private:
  void run();
  void serve();
  std::optional<Clock::time_point> nextTimer() const;
  void acceptPending();
  void readFrom(Conn& c);
  void handleHelloBytes(Conn& c);
  void admit(Conn& c, const bootwire::Hello& hello);
  void reject(Conn& c, ErrorKind kind, const std::string& text);
  void handleFrames(Conn& c);
  void handleBlob(Conn& c, std::vector<uint8_t> blob, bool routed);
  void routeRound();
  void handleBye(Conn& c, std::string reason);
  std::string leftText(int rank) const;
  void connectionLost(Conn& c, const std::string& why);
  void failAll(const std::string& text);
  void notifyJoined(const std::string& text);
  void send(Conn& c, Kind kind, std::span<const uint8_t> payload);
  void send(Conn& c, Buffer frame);
  void flush(Conn& c);
  void close(Conn& c);
  void checkTimers();
  void enterFinishing();
  void flushBeforeStop();
  bool everyRankLeft() const;
  std::string missingRanks() const;

  asio::io_context io_;
  tcp::acceptor acceptor_;
  bootwire::Secret secret_;
  int64_t joinTimeoutMs_;
  std::string address_;
  uint16_t port_ = 0;
  pid_t ownerPid_;
  StopSignal stop_;
  std::atomic<bool> finished_{false};
  // A variant member, so that ~RootServer alone decides whether it is
  // destroyed: a forked child must drop it without calling into pthread.
  union {
    std::thread thread_;
  };

  // Everything below belongs to the root thread once it started. (Kept here
  // rather than on its stack so that a forked child, which inherits this
  // memory but not the thread, can still free all of it.)
  std::vector<pollfd> pollFds_;
  std::vector<Conn*> polledConns_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> rankConn_;  // by rank; nullptr before joining and after leaving
  std::vector<bool> left_;       // by rank: said bye, or left after being told of an error
  std::vector<std::string> byeReasons_;  // by rank: why it gave up, where its bye said
  int nranks_ = 0;
  int joined_ = 0;
  int firstLeaver_ = -1;
  std::string joinFailure_;  // why the ranks can never form one communicator
  Clock::time_point acceptPausedUntil_{};  // while accept() fails; epoch when it works
  Phase phase_ = Phase::Joining;
  std::optional<Clock::time_point> joinDeadline_;
  Clock::time_point finishDeadline_;
};

Status RootServer::create(const asio::ip::address& ip, uint16_t port, const bootwire::Secret& secret,
                          int64_t joinTimeoutMs, std::unique_ptr<RootServer>& out, bool* addressInUse) {
  auto root = std::make_unique<RootServer>(secret, joinTimeoutMs);
  const std::string where = formatEndpoint(ip, port);
  if (!root->stop_.valid()) {
    return systemError(fmt::format("bootstrap root: eventfd failed: {}", std::strerror(root->stop_.error())));
  }
  const tcp::endpoint endpoint(ip, port);
  std::error_code ec;
  openCloseOnExec(root->acceptor_, endpoint.protocol(), ec);
  if (ec) return systemError(fmt::format("bootstrap: cannot open a socket for the root at {}: {}", where, ec.message()));
  root->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  root->acceptor_.bind(endpoint, ec);
  if (ec) {
    if (addressInUse != nullptr) *addressInUse = ec == asio::error::address_in_use;
    return systemError(fmt::format("bootstrap: cannot bind the root to {}: {}", where, ec.message()));
  }
  root->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) root->acceptor_.non_blocking(true, ec);
  if (ec) return systemError(fmt::format("bootstrap: cannot listen on {}: {}", where, ec.message()));
  root->port_ = root->acceptor_.local_endpoint(ec).port();
  if (ec) return systemError(fmt::format("bootstrap: cannot read the root's port: {}", ec.message()));
  root->address_ = formatEndpoint(ip, root->port_);
  out = std::move(root);
  return Status::success();
}

RootServer::~RootServer() {
  if (!thread_.joinable()) {
    thread_.~thread();
  } else if (::getpid() == ownerPid_) {
    stop_.raise();
    thread_.join();
    thread_.~thread();
  }
  // In a forked child the thread only exists in the parent, and its handle
  // names memory that the child's own threads may reuse: it is left as it
  // is (a std::thread holds no resource of its own to release).
}

void RootServer::run() {
  pthread_setname_np(pthread_self(), "hcl-bootroot");
  const Status served = noThrow("bootstrap root", [&] {
    serve();
    return Status{};
  });
  // Out of memory, say: every rank still connected sees its connection
  // close and fails, rather than the exception ending the process.
  if (!served.ok()) (void)noThrow("", [&] {
    log::warn(log::Bootstrap, "bootstrap root {} gives up: {}", address_, served.message());
    return Status{};
  });
  // Closing the listener before the connections refuses late arrivals cleanly.
  std::error_code ec;
  acceptor_.close(ec);
  conns_.clear();
  finished_.store(true, std::memory_order_release);
}

void RootServer::serve() {
  std::vector<pollfd>& fds = pollFds_;
  std::vector<Conn*>& polled = polledConns_;
  bool stopRequested = false;
  while (!stopRequested) {
    fds.clear();
    polled.clear();
    fds.push_back({stop_.fd(), POLLIN, 0});
    const bool listening = acceptor_.is_open() && Clock::now() >= acceptPausedUntil_;
    if (listening) fds.push_back({acceptor_.native_handle(), POLLIN, 0});
    for (auto& c : conns_) {
      short events = 0;
      if (!c->closeWhenFlushed && phase_ != Phase::Finishing) events |= POLLIN;
      if (c->hasOutput()) events |= POLLOUT;
      fds.push_back({c->socket.native_handle(), events, 0});
      polled.push_back(c.get());
    }
    int timeoutMs = -1;
    if (auto timer = nextTimer()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*timer - Clock::now()).count();
      timeoutMs = static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
    }
    const int n = ::poll(fds.data(), fds.size(), timeoutMs);
    if (n < 0 && errno != EINTR) {
      log::warn(log::Bootstrap, "bootstrap root {}: poll failed: {}", address_, std::strerror(errno));
      break;
    }
    if (n > 0) {
      if (fds[0].revents != 0) {
        // A rank whose join failed, or the process leaving, stops the root
        // at once; what is queued for the ranks still goes out.
        flushBeforeStop();
        stopRequested = true;
        break;
      }
      const size_t first = listening ? 2 : 1;
      if (listening && fds[1].revents != 0) acceptPending();
      for (size_t i = 0; i < polled.size(); ++i) {
        Conn& c = *polled[i];
        const short rev = fds[first + i].revents;
        if (c.closed || rev == 0) continue;
        const bool reading = !c.closeWhenFlushed && phase_ != Phase::Finishing;
        if (reading && (rev & (POLLIN | POLLHUP | POLLERR))) {
          readFrom(c);
        } else if (!reading && (rev & (POLLHUP | POLLERR))) {
          close(c);  // the peer is gone; nothing left can be delivered
        }
      }
    }
    for (auto& c : conns_)
      if (!c->closed && c->hasOutput()) flush(*c);
    for (auto& c : conns_)
      if (!c->closed && c->closeWhenFlushed && !c->hasOutput()) close(*c);
    checkTimers();
    std::erase_if(conns_, [](const auto& c) { return c->closed; });
    if (phase_ == Phase::Finishing && conns_.empty()) break;
  }
  if (!stopRequested) log::info(log::Bootstrap, "bootstrap root {} finished", address_);
}

std::optional<Clock::time_point> RootServer::nextTimer() const {
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  if (phase_ == Phase::Joining && joinDeadline_) consider(*joinDeadline_);
  if (phase_ == Phase::Finishing) consider(finishDeadline_);
  if (acceptor_.is_open() && acceptPausedUntil_ > Clock::now()) consider(acceptPausedUntil_);
  for (const auto& c : conns_) {
    if (c->rank < 0) consider(c->since + (c->closeWhenFlushed ? kFlushTimeout : kHelloTimeout));
  }
  return next;
}

void RootServer::acceptPending() {
  while (true) {
    tcp::socket socket(io_);
    tcp::endpoint peer;
    std::error_code ec;
    acceptCloseOnExec(acceptor_, socket, peer, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return;
    if (acceptErrorIsTransient(ec)) continue;
    if (ec) {
      // Out of file descriptors, typically: the pending connection stays
      // queued, so listening again at once would spin. Pause, say it once.
      if (acceptPausedUntil_ == Clock::time_point{}) {
        log::warn(log::Bootstrap, "bootstrap root {}: accept failed: {}; retrying every {} ms", address_,
                  ec.message(), kAcceptRetry.count());
      }
      acceptPausedUntil_ = Clock::now() + kAcceptRetry;
      return;
    }
    acceptPausedUntil_ = {};
    socket.non_blocking(true, ec);
    if (ec) continue;
    socket.set_option(tcp::no_delay(true), ec);
    conns_.push_back(std::make_unique<Conn>(std::move(socket), formatEndpoint(peer.address(), peer.port())));
    log::trace(log::Bootstrap, "bootstrap root {}: connection from {}", address_, conns_.back()->peer);
  }
}

void RootServer::readFrom(Conn& c) {
  while (!c.closed) {
    // Before the hello is admitted read only the hello, so a stranger cannot
    // make the root buffer arbitrary data.
    const size_t want = c.rank < 0 ? bootwire::kHelloBytes - c.in.size() : kReadChunk;
    const size_t old = c.in.size();
    c.in.resize(old + want);
    std::error_code ec;
    const size_t got = c.socket.read_some(asio::buffer(c.in.data() + old, want), ec);
    c.in.resize(old + got);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return;
    if (ec == asio::error::interrupted) continue;
    if (ec) {
      connectionLost(c, ec == asio::error::eof ? std::string("closed the connection") : ec.message());
      return;
    }
    const bool wasStranger = c.rank < 0;
    if (wasStranger) {
      handleHelloBytes(c);
      if (c.rank < 0) return;  // still incomplete, rejected or dropped
    } else {
      handleFrames(c);
    }
    if (c.closeWhenFlushed || phase_ == Phase::Finishing) return;
  }
}

void RootServer::handleHelloBytes(Conn& c) {
  const size_t have = c.in.size();
  const size_t magicBytes = std::min(have, bootwire::kMagicBytes);
  if (!std::equal(c.in.begin(), c.in.begin() + magicBytes, bootwire::kHelloMagic.begin())) {
    log::warn(log::Bootstrap, "dropped bootstrap connection from {}: wrong secret (not an HCL bootstrap hello)",
              c.peer);
    close(c);
    return;
  }
  if (have > bootwire::kMagicBytes) {
    const size_t secretBytes = std::min(have, bootwire::kSecretEnd) - bootwire::kMagicBytes;
    if (!std::equal(c.in.begin() + bootwire::kMagicBytes, c.in.begin() + bootwire::kMagicBytes + secretBytes,
                    secret_.begin())) {
      log::warn(log::Bootstrap, "dropped bootstrap connection from {}: wrong secret", c.peer);
      close(c);
      return;
    }
  }
  if (have < bootwire::kHelloBytes) return;
  const bootwire::Hello hello = bootwire::decodeHello(std::span<const uint8_t, bootwire::kHelloBytes>(c.in.data(), bootwire::kHelloBytes));
  c.in.clear();
  admit(c, hello);
}

void RootServer::admit(Conn& c, const bootwire::Hello& hello) {
  if (phase_ != Phase::Joining) {
    reject(c, ErrorKind::Retry,
           fmt::format("the bootstrap at {} is no longer accepting ranks (rank {} arrived after it {})", address_,
                       hello.rank, phase_ == Phase::Running ? "completed" : "failed"));
    return;
  }
  if (hello.nranks <= 0 || hello.nranks > bootwire::kMaxRanks || hello.rank < 0 || hello.rank >= hello.nranks) {
    reject(c, ErrorKind::Fatal, fmt::format("invalid rank {} for nranks {}", hello.rank, hello.nranks));
    return;
  }
  if (nranks_ == 0) {
    nranks_ = hello.nranks;
    rankConn_.assign(nranks_, nullptr);
    left_.assign(nranks_, false);
    byeReasons_.assign(static_cast<size_t>(nranks_), std::string());
  }
  if (!joinFailure_.empty()) {
    reject(c, ErrorKind::Fatal, joinFailure_);
    return;
  }
  if (hello.nranks != nranks_) {
    // Ranks that disagree on the size can never form one communicator. Every
    // rank hears why at once, also those still to come, instead of waiting
    // out the join timeout; the root lives on until that deadline to tell them.
    joinFailure_ = fmt::format("rank {} joined with nranks={} but the ranks already joined have nranks={}",
                               hello.rank, hello.nranks, nranks_);
    reject(c, ErrorKind::Fatal, joinFailure_);
    notifyJoined(joinFailure_);
    return;
  }
  if (Conn* first = rankConn_[hello.rank]; first != nullptr) {
    reject(c, ErrorKind::Fatal,
           fmt::format("rank {} joined twice (from {} and from {})", hello.rank, first->peer, c.peer));
    return;
  }
  c.rank = hello.rank;
  rankConn_[c.rank] = &c;
  ++joined_;
  if (!joinDeadline_ && joinTimeoutMs_ > 0) joinDeadline_ = Deadline(joinTimeoutMs_).end();
  log::info(log::Bootstrap, "bootstrap root {}: rank {} of {} joined from {}", address_, c.rank, nranks_, c.peer);
  if (joined_ < nranks_) return;

  phase_ = Phase::Running;
  std::error_code ec;
  acceptor_.close(ec);  // the communicator is complete; late connections are refused
  std::vector<uint8_t> payload;
  bootwire::putU32(payload, static_cast<uint32_t>(nranks_));
  std::vector<uint8_t> frame;
  bootwire::appendFrame(frame, Kind::JoinOk, payload);
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(frame));
  for (Conn* rc : rankConn_) send(*rc, shared);
}

void RootServer::reject(Conn& c, ErrorKind kind, const std::string& text) {
  log::warn(log::Bootstrap, "bootstrap root {}: rejected connection from {}: {}", address_, c.peer, text);
  send(c, Kind::Error, bootwire::encodeError(kind, text));
  c.closeWhenFlushed = true;
  c.since = Clock::now();
}

void RootServer::handleFrames(Conn& c) {
  size_t pos = 0;
  while (!c.closed && phase_ == Phase::Running) {
    if (c.in.size() - pos < bootwire::kFrameHeaderBytes) break;
    const auto header = bootwire::decodeFrameHeader(
        std::span<const uint8_t, bootwire::kFrameHeaderBytes>(c.in.data() + pos, bootwire::kFrameHeaderBytes));
    if ((header.kind != Kind::Blob && header.kind != Kind::Route && header.kind != Kind::Bye) ||
        header.length > bootwire::kMaxFrameBytes ||
        (header.kind == Kind::Bye && header.length > bootwire::kMaxByeReasonBytes)) {
      failAll(fmt::format("rank {} sent a malformed bootstrap message (kind {}, length {})", c.rank,
                          static_cast<uint32_t>(header.kind), header.length));
      return;
    }
    if (c.in.size() - pos - bootwire::kFrameHeaderBytes < header.length) {
      // One allocation for a large blob, though not on a header's word
      // alone: beyond this the buffer grows with the bytes that arrive.
      if (header.length <= kReserveAheadBytes) c.in.reserve(pos + bootwire::kFrameHeaderBytes + header.length);
      break;
    }
    const auto begin = c.in.begin() + static_cast<ptrdiff_t>(pos + bootwire::kFrameHeaderBytes);
    pos += bootwire::kFrameHeaderBytes + header.length;
    if (header.kind == Kind::Bye) {
      handleBye(c, std::string(begin, begin + static_cast<ptrdiff_t>(header.length)));
      return;
    }
    handleBlob(c, std::vector<uint8_t>(begin, begin + static_cast<ptrdiff_t>(header.length)),
               header.kind == Kind::Route);
  }
  if (!c.closed) c.in.erase(c.in.begin(), c.in.begin() + static_cast<ptrdiff_t>(pos));
}

void RootServer::handleBlob(Conn& c, std::vector<uint8_t> blob, bool routed) {
  if (firstLeaver_ >= 0) {
    send(c, Kind::Error, bootwire::encodeError(ErrorKind::Fatal, leftText(firstLeaver_)));
    c.notified = true;
    return;
  }
  if (c.blob) {
    failAll(fmt::format("rank {} sent two contributions to one bootstrap round", c.rank));
    return;
  }
  c.blob = std::move(blob);
  c.routed = routed;
  for (Conn* rc : rankConn_)
    if (rc == nullptr || !rc->blob) return;
  const auto mixed = std::find_if(rankConn_.begin(), rankConn_.end(),
                                  [&](const Conn* rc) { return rc->routed != rankConn_.front()->routed; });
  if (mixed != rankConn_.end()) {
    failAll(fmt::format("ranks {} and {} disagree on the kind of bootstrap round (allgather or alltoall)",
                        rankConn_.front()->rank, (*mixed)->rank));
    return;
  }
  if (routed) {
    routeRound();
    return;
  }

  // Built in place: the round result can be large and is shared by every rank.
  size_t payloadBytes = 4;
  for (Conn* rc : rankConn_) payloadBytes += 8 + rc->blob->size();
  std::vector<uint8_t> frame;
  frame.reserve(bootwire::kFrameHeaderBytes + payloadBytes);
  bootwire::putU32(frame, static_cast<uint32_t>(Kind::Gather));
  bootwire::putU64(frame, payloadBytes);
  bootwire::putU32(frame, static_cast<uint32_t>(nranks_));
  for (Conn* rc : rankConn_) {
    bootwire::putU64(frame, rc->blob->size());
    frame.insert(frame.end(), rc->blob->begin(), rc->blob->end());
    rc->blob.reset();
  }
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(frame));
  for (Conn* rc : rankConn_) send(*rc, shared);
}

// Each rank gets, from every rank, the part addressed to it; only the
// parts there are, so a round of few parts costs the root little.
void RootServer::routeRound() {
  const auto n = static_cast<size_t>(nranks_);
  std::vector<std::vector<std::pair<uint32_t, std::span<const uint8_t>>>> toRank(n);
  std::vector<bootwire::PartView> parts;
  for (Conn* rc : rankConn_) {
    if (!bootwire::decodeParts(*rc->blob, n, parts)) {
      failAll(fmt::format("rank {} sent a malformed alltoall contribution", rc->rank));
      return;
    }
    for (const bootwire::PartView& p : parts) toRank[p.rank].emplace_back(static_cast<uint32_t>(rc->rank), p.bytes);
  }
  for (Conn* rc : rankConn_) {
    const auto& mine = toRank[static_cast<size_t>(rc->rank)];  // by source, rising: ranks contribute in order
    size_t payloadBytes = 4;
    for (const auto& [from, bytes] : mine) payloadBytes += 12 + bytes.size();
    auto frame = std::make_shared<std::vector<uint8_t>>();
    frame->reserve(bootwire::kFrameHeaderBytes + payloadBytes);
    bootwire::putU32(*frame, static_cast<uint32_t>(Kind::Parts));
    bootwire::putU64(*frame, payloadBytes);
    bootwire::putU32(*frame, static_cast<uint32_t>(mine.size()));
    for (const auto& [from, bytes] : mine) {
      bootwire::putU32(*frame, from);
      bootwire::putU64(*frame, bytes.size());
      frame->insert(frame->end(), bytes.begin(), bytes.end());
    }
    send(*rc, Buffer(std::move(frame)));
  }
  for (Conn* rc : rankConn_) {
    rc->blob.reset();
    rc->routed = false;
  }
}

// A rank that gave up says why in its bye; the others quote it.
std::string RootServer::leftText(int rank) const {
  const std::string& reason = byeReasons_[static_cast<size_t>(rank)];
  if (reason.empty()) return fmt::format("rank {} left the bootstrap", rank);
  return fmt::format("rank {} left the bootstrap, failing: {}", rank, reason);
}

void RootServer::handleBye(Conn& c, std::string reason) {
  const int rank = c.rank;
  log::trace(log::Bootstrap, "bootstrap root {}: rank {} said bye{}", address_, rank,
             reason.empty() ? "" : " (failing: " + reason + ")");
  left_[rank] = true;
  byeReasons_[static_cast<size_t>(rank)] = std::move(reason);
  if (firstLeaver_ < 0) firstLeaver_ = rank;
  close(c);
  // Ranks waiting in a round can no longer complete it.
  const auto text = leftText(rank);
  for (Conn* rc : rankConn_) {
    if (rc != nullptr && rc->blob && !rc->notified) {
      rc->blob.reset();
      rc->notified = true;
      send(*rc, Kind::Error, bootwire::encodeError(ErrorKind::Fatal, text));
    }
  }
  if (everyRankLeft()) enterFinishing();
}

void RootServer::connectionLost(Conn& c, const std::string& why) {
  const int rank = c.rank;
  const bool expected = rank < 0 || c.notified || c.closeWhenFlushed || phase_ == Phase::Finishing;
  // A rank that gives up while others are still missing most likely timed
  // out waiting for them: the others should hear who never came.
  const std::string missing = rank >= 0 && phase_ == Phase::Joining ? missingRanks() : "";
  if (rank < 0 && !c.closeWhenFlushed)
    log::trace(log::Bootstrap, "bootstrap root {}: connection from {} ended before its hello: {}", address_, c.peer, why);
  close(c);
  if (rank < 0 || phase_ == Phase::Finishing) return;
  if (expected) {
    left_[rank] = true;
    if (everyRankLeft()) enterFinishing();
    return;
  }
  log::warn(log::Bootstrap, "bootstrap root {}: rank {} ({}) {} before leaving", address_, rank, c.peer, why);
  left_[rank] = true;
  failAll(missing.empty() ? fmt::format("rank {} left the bootstrap", rank)
                          : fmt::format("rank {} left the bootstrap while ranks {} had not joined", rank, missing));
}

void RootServer::failAll(const std::string& text) {
  notifyJoined(text);
  enterFinishing();
}

void RootServer::notifyJoined(const std::string& text) {
  log::warn(log::Bootstrap, "bootstrap root {}: {}", address_, text);
  auto frame = std::make_shared<std::vector<uint8_t>>();
  bootwire::appendFrame(*frame, Kind::Error, bootwire::encodeError(ErrorKind::Fatal, text));
  Buffer shared = std::move(frame);
  for (Conn* rc : rankConn_) {
    if (rc == nullptr || rc->closed || rc->notified) continue;
    rc->notified = true;
    rc->closeWhenFlushed = true;
    send(*rc, shared);
  }
}

void RootServer::enterFinishing() {
  if (phase_ == Phase::Finishing) return;
  phase_ = Phase::Finishing;
  finishDeadline_ = Clock::now() + kFlushTimeout;
  std::error_code ec;
  acceptor_.close(ec);
  for (auto& c : conns_) c->closeWhenFlushed = true;
}

void RootServer::send(Conn& c, Kind kind, std::span<const uint8_t> payload) {
  auto frame = std::make_shared<std::vector<uint8_t>>();
  bootwire::appendFrame(*frame, kind, payload);
  send(c, Buffer(std::move(frame)));
}

void RootServer::send(Conn& c, Buffer frame) {
  if (!c.closed) c.out.push_back(std::move(frame));
}

void RootServer::flush(Conn& c) {
  while (!c.out.empty()) {
    const auto& front = *c.out.front();
    std::error_code ec;
    c.outPos += c.socket.write_some(asio::buffer(front.data() + c.outPos, front.size() - c.outPos), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return;
    if (ec == asio::error::interrupted) continue;
    if (ec) {
      connectionLost(c, ec.message());
      return;
    }
    if (c.outPos == front.size()) {
      c.out.pop_front();
      c.outPos = 0;
    }
  }
}

// Within kFlushTimeout: replies of a round can be large, and a rank whose
// process leaves right after its own reply must not cut off the others'.
void RootServer::flushBeforeStop() {
  const auto giveUp = Clock::now() + kFlushTimeout;
  std::vector<pollfd> waiting;
  for (;;) {
    waiting.clear();
    for (auto& c : conns_) {
      if (c->closed || !c->hasOutput()) continue;
      flush(*c);
      if (!c->closed && c->hasOutput()) waiting.push_back({c->socket.native_handle(), POLLOUT, 0});
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(giveUp - Clock::now()).count();
    if (waiting.empty() || left <= 0) return;
    if (::poll(waiting.data(), waiting.size(), static_cast<int>(std::min<int64_t>(left, 100))) < 0 && errno != EINTR) {
      return;
    }
  }
}

void RootServer::close(Conn& c) {
  if (c.closed) return;
  std::error_code ec;
  c.socket.close(ec);
  c.closed = true;
  c.out.clear();
  if (c.rank >= 0 && rankConn_[c.rank] == &c) rankConn_[c.rank] = nullptr;
}

void RootServer::checkTimers() {
  const auto now = Clock::now();
  for (auto& c : conns_) {
    if (c->closed || c->rank >= 0) continue;
    if (c->closeWhenFlushed) {
      if (now >= c->since + kFlushTimeout) close(*c);
    } else if (now >= c->since + kHelloTimeout) {
      log::warn(log::Bootstrap, "dropped bootstrap connection from {}: no hello within {} s", c->peer,
                std::chrono::duration_cast<std::chrono::seconds>(kHelloTimeout).count());
      close(*c);
    }
  }
  if (phase_ == Phase::Joining && joinDeadline_ && now >= *joinDeadline_) {
    failAll(fmt::format("timed out waiting for ranks {} (HCL_TIMEOUT_MS={} after the first rank joined the root at {})",
                        missingRanks(), joinTimeoutMs_, address_));
  }
  if (phase_ == Phase::Finishing && now >= finishDeadline_) {
    for (auto& c : conns_) close(*c);
  }
}

bool RootServer::everyRankLeft() const {
  return nranks_ > 0 && std::all_of(left_.begin(), left_.end(), [](bool b) { return b; });
}

std::string RootServer::missingRanks() const {
  std::string list;
  size_t listed = 0;
  size_t missing = 0;
  for (int r = 0; r < nranks_; ++r) {
    if (rankConn_[r] != nullptr) continue;
    ++missing;
    if (listed < kMaxListedRanks) {
      if (!list.empty()) list += ',';
      list += std::to_string(r);
      ++listed;
    }
  }
  if (missing > listed) list += fmt::format(",... ({} missing)", missing);
  return list;
}

// Owns every root this process started; stops and joins them at exit.
class RootRegistry {
 public:
  static RootRegistry& instance() {
    static RootRegistry registry;
    return registry;
  }

  void add(std::unique_ptr<RootServer> root) {
    std::lock_guard lock(mutex_);
    std::erase_if(roots_, [](const auto& r) { return r->finished(); });
    roots_.reserve(roots_.size() + 1);  // a root that could not be kept must not be left running
    root->start();
    roots_.push_back(std::move(root));
  }

  bool stop(uint16_t port, const bootwire::Secret& secret) {
    std::lock_guard lock(mutex_);
    for (const auto& r : roots_) {
      if (r->serves(port, secret) && !r->finished()) {
        r->stop();
        return true;
      }
    }
    return false;
  }

  // A forked child may inherit the mutex held by a parent thread: it then
  // counts as running, and the caller's wait runs out instead of hanging.
  bool anyRunning() {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock) return true;
    return std::any_of(roots_.begin(), roots_.end(),
                       [](const auto& r) { return r->runsInThisProcess() && !r->finished(); });
  }

  bool running(uint16_t port) {
    std::lock_guard lock(mutex_);
    return std::any_of(roots_.begin(), roots_.end(),
                       [port](const auto& r) { return r->port() == port && !r->finished(); });
  }

 private:
  RootRegistry() {
    // Touch the logger so its state is built before, and destroyed after, this registry.
    (void)log::enabled(log::Level::Warn, log::Bootstrap);
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<RootServer>> roots_;
};

Status startBootstrapRootThrowing(const asio::ip::address& ip, uint16_t port, const bootwire::Secret& secret,
                                  uint16_t* boundPort, bool* addressInUse) {
  if (addressInUse != nullptr) *addressInUse = false;
  const int64_t joinTimeoutMs = paramInt("HCL_TIMEOUT_MS");
  RootRegistry& registry = RootRegistry::instance();
  std::unique_ptr<RootServer> root;
  HCL_TRY(RootServer::create(ip, port, secret, joinTimeoutMs, root, addressInUse));
  if (boundPort != nullptr) *boundPort = root->port();
  registry.add(std::move(root));
  return Status::success();
}

}  // namespace

Status startBootstrapRoot(const asio::ip::address& ip, uint16_t port, const bootwire::Secret& secret,
                          uint16_t* boundPort, bool* addressInUse) {
  return noThrow("bootstrap root",
                 [&] { return startBootstrapRootThrowing(ip, port, secret, boundPort, addressInUse); });
}

bool bootstrapRootRunning(uint16_t port) { return RootRegistry::instance().running(port); }

void waitForBootstrapRoots(std::chrono::milliseconds limit) {
  const auto giveUp = Clock::now() + limit;
  while (RootRegistry::instance().anyRunning() && Clock::now() < giveUp) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool stopBootstrapRoot(uint16_t port, const bootwire::Secret& secret) {
  if (!RootRegistry::instance().stop(port, secret)) return false;
  // Until its last words are out: the caller's process may exit next, and
  // the other ranks should hear the root's verdict, not a closed socket.
  const auto giveUp = Clock::now() + kFlushTimeout;
  while (RootRegistry::instance().running(port) && Clock::now() < giveUp) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace hcl
