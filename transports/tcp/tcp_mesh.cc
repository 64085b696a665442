#include "transports/tcp/tcp_mesh.h"

#include <fmt/format.h>

#include <algorithm>
#include <asio/error.hpp>
#include <asio/read.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "core/socket_fd.h"
#include "core/deadline.h"
#include "core/log.h"
#include "transports/link.h"
#include "transports/tcp/tcp_connection.h"
#include "transports/tcp/tcp_hello.h"
#include "transports/tcp/tcp_socket_util.h"
#include "transports/tcp/tcp_stream.h"
#include "transports/tcp/tcp_stripe.h"

namespace hcl::tcp {
namespace {

using asio::ip::tcp;
using std::chrono::milliseconds;

constexpr milliseconds kPollInterval{10};  // how often abortFlag and the deadline are checked
constexpr milliseconds kFirstRetryDelay{10};
constexpr milliseconds kMaxRetryDelay{500};

std::string describeAddress(const NetAddress& address) {
  return fmt::format("tcp {} via {}", formatHostPort(address.ip, address.port), address.ifname);
}

// One socket we open to a higher-ranked peer: stream `streamIndex` of its
// `streamCount`.
struct Outgoing {
  explicit Outgoing(asio::io_context& io) : socket(io), retryTimer(io) {}
  int peer = -1;
  int streamIndex = 0;
  int streamCount = 1;
  std::vector<std::string> congestion;  // algorithms to try before connecting
  NetAddress address;
  tcp::endpoint endpoint;
  tcp::socket socket;
  asio::steady_timer retryTimer;
  HelloBytes hello{};
  milliseconds retryDelay = kFirstRetryDelay;
  int attempts = 0;
  std::string lastError = "no attempt finished";
  bool done = false;
};

// An accepted socket whose hello has not been judged yet.
struct Handshake {
  Handshake(tcp::socket s, const TcpListener& l) : socket(std::move(s)), listener(&l) {}
  tcp::socket socket;
  const TcpListener* listener;
  std::string remote = "unknown address";
  HelloBytes hello{};
  bool finished = false;
};

// A lower-ranked peer's socket, hello verified.
struct Accepted {
  tcp::socket socket;
  std::string description;
  const TcpListener* listener = nullptr;
};

// What a lower-ranked peer has connected so far. Its first hello fixes the
// number of streams.
struct Incoming {
  int streamCount = 0;  // 0: no hello yet
  std::vector<std::optional<Accepted>> streams;
  int accepted() const {
    return static_cast<int>(std::count_if(streams.begin(), streams.end(),
                                          [](const auto& a) { return a.has_value(); }));
  }
  bool complete() const { return streamCount > 0 && accepted() == streamCount; }
};

class MeshSetup {
 public:
  MeshSetup(const TransportContext& ctx, asio::io_context& io,
            std::vector<std::unique_ptr<TcpListener>>& listeners, int streams)
      : ctx_(ctx),
        io_(io),
        listeners_(listeners),
        streams_(streams),
        congestionWarned_(std::any_of(listeners.begin(), listeners.end(),
                                      [](const auto& l) { return l->congestionRefused; })) {}

  Status plan(const std::vector<int>& peers);
  Status run();
  void emitConnections(const std::shared_ptr<asio::io_context>& io,
                       std::vector<std::unique_ptr<Connection>>& out);

 private:
  bool complete() const;
  bool aborted() const { return ctx_.abortFlag && ctx_.abortFlag->load(std::memory_order_acquire); }
  std::string missingPeers() const;
  void stopEverything();

  void startConnect(Outgoing& o);
  void onConnected(Outgoing& o, const asio::error_code& ec);
  void retryLater(Outgoing& o, std::string why);
  void armAccept(TcpListener& listener);
  void startHandshake(const TcpListener& listener, tcp::socket socket);
  void onHello(Handshake& h, const asio::error_code& ec);

  const TransportContext& ctx_;
  asio::io_context& io_;
  std::vector<std::unique_ptr<TcpListener>>& listeners_;
  std::vector<std::unique_ptr<Outgoing>> outgoing_;
  std::map<int, Incoming> incoming_;  // expected lower ranks
  int streams_;                       // sockets we open to each higher rank
  std::vector<std::unique_ptr<Handshake>> handshakes_;
  Status fatal_;
  bool closing_ = false;  // set once the loop ends: completion handlers then do nothing
  // One warning per rank about a refused HCL_TCP_CONGESTION (its listener's,
  // or the first link's); the other links log it at INFO.
  bool congestionWarned_;
};

Status MeshSetup::plan(const std::vector<int>& peers) {
  const int rank = ctx_.rank;
  if (ctx_.peers == nullptr || ctx_.links == nullptr ||
      ctx_.peers->size() < static_cast<size_t>(ctx_.nranks) ||
      ctx_.links->size() < static_cast<size_t>(ctx_.nranks)) {
    return internalError(fmt::format(
        "rank {}: TCP connect needs the peer infos and links of all {} ranks", rank, ctx_.nranks));
  }
  const std::vector<NetInterface> interfaces = listInterfaces();
  for (int peer : std::set<int>(peers.begin(), peers.end())) {
    if (peer < 0 || peer >= ctx_.nranks)
      return invalidArgument(
          fmt::format("rank {}: TCP peer rank {} is outside [0, {})", rank, peer, ctx_.nranks));
    if (peer == rank) continue;
    if (peer < rank) {
      incoming_.emplace(peer, Incoming{});
      continue;
    }
    const std::vector<NetAddress>& addresses = (*ctx_.peers)[static_cast<size_t>(peer)].addresses;
    const int index = (*ctx_.links)[static_cast<size_t>(peer)].listenerAddress;
    if (index < 0 || static_cast<size_t>(index) >= addresses.size()) {
      return internalError(fmt::format(
          "rank {}: link to rank {} names listener address {}, but rank {} published {} addresses",
          rank, peer, index, peer, addresses.size()));
    }
    const NetAddress& address = addresses[static_cast<size_t>(index)];
    asio::error_code ec;
    const asio::ip::address ip = asio::ip::make_address(address.ip, ec);
    if (ec) {
      return invalidArgument(fmt::format("rank {}: rank {} published the invalid address '{}'",
                                         rank, peer, address.ip));
    }
    const std::vector<std::string> congestion =
        congestionCandidates(paramString("HCL_TCP_CONGESTION"), isThisHostAddress(ip, interfaces));
    for (int stream = 0; stream < streams_; ++stream) {
      auto o = std::make_unique<Outgoing>(io_);
      o->peer = peer;
      o->streamIndex = stream;
      o->streamCount = streams_;
      o->congestion = congestion;
      o->address = address;
      o->endpoint = tcp::endpoint(ip, address.port);
      o->hello = encodeHello(makeHello(ctx_, peer, stream, streams_));
      outgoing_.push_back(std::move(o));
    }
  }
  if (!incoming_.empty() && listeners_.empty()) {
    return internalError(fmt::format("rank {}: no TCP listener is open to accept rank {}", rank,
                                     incoming_.begin()->first));
  }
  return {};
}

Status MeshSetup::run() {
  for (auto& listener : listeners_)
    if (!incoming_.empty()) armAccept(*listener);
  for (auto& o : outgoing_) startConnect(*o);

  const Deadline deadline(ctx_.timeoutMs);
  Status result;
  for (;;) {
    std::erase_if(handshakes_, [](const auto& h) { return h->finished; });
    if (!fatal_.ok()) {
      result = fatal_;
      break;
    }
    if (complete()) break;
    if (aborted()) {
      result = remoteError(fmt::format("rank {}: TCP connection setup aborted; still missing {}",
                                       ctx_.rank, missingPeers()));
      break;
    }
    if (deadline.expired()) {
      result =
          remoteError(fmt::format("rank {}: TCP connection setup timed out after {} ms; missing {}",
                                  ctx_.rank, ctx_.timeoutMs, missingPeers()));
      break;
    }
    if (io_.stopped()) io_.restart();
    io_.run_one_for(kPollInterval);
  }
  stopEverything();
  return result;
}

bool MeshSetup::complete() const {
  return std::all_of(outgoing_.begin(), outgoing_.end(), [](const auto& o) { return o->done; }) &&
         std::all_of(incoming_.begin(), incoming_.end(),
                     [](const auto& in) { return in.second.complete(); });
}

std::string MeshSetup::missingPeers() const {
  std::vector<std::string> parts;
  // One entry per peer: its first missing stream, and how many are missing.
  std::set<int> named;
  for (const auto& o : outgoing_) {
    if (o->done || !named.insert(o->peer).second) continue;
    const auto missing = std::count_if(outgoing_.begin(), outgoing_.end(), [&](const auto& x) {
      return x->peer == o->peer && !x->done;
    });
    const std::string streams =
        o->streamCount > 1 ? fmt::format(", {} of {} streams missing", missing, o->streamCount)
                           : std::string();
    parts.push_back(fmt::format("rank {} (connecting to {}: {}, {} attempts{})", o->peer,
                                describeAddress(o->address), o->lastError, o->attempts, streams));
  }
  const std::vector<NetAddress>& ours = (*ctx_.peers)[static_cast<size_t>(ctx_.rank)].addresses;
  for (const auto& [peer, in] : incoming_) {
    if (in.complete()) continue;
    const int index = (*ctx_.links)[static_cast<size_t>(peer)].listenerAddress;
    const std::string where = index >= 0 && static_cast<size_t>(index) < ours.size()
                                  ? describeAddress(ours[static_cast<size_t>(index)])
                                  : std::string("our listener");
    if (in.streamCount == 0)
      parts.push_back(fmt::format("rank {} (has not connected to {})", peer, where));
    else
      parts.push_back(fmt::format("rank {} (connected {} of {} streams to {})", peer,
                                  in.accepted(), in.streamCount, where));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// Cancels every pending operation and runs the cancelled handlers, so none
// can run after this object is gone.
void MeshSetup::stopEverything() {
  closing_ = true;
  asio::error_code ignored;
  for (auto& listener : listeners_) listener->acceptor.cancel(ignored);
  for (auto& o : outgoing_) {
    o->retryTimer.cancel();
    if (!o->done) o->socket.close(ignored);
  }
  for (auto& h : handshakes_) h->socket.close(ignored);
  io_.restart();
  io_.poll();
  handshakes_.clear();
}

void MeshSetup::startConnect(Outgoing& o) {
  asio::error_code ec;
  o.socket = tcp::socket(io_);
  openCloseOnExec(o.socket, o.endpoint.protocol(), ec);
  if (ec) {
    fatal_ = systemError(fmt::format("rank {}: cannot create a socket to connect to rank {}: {}",
                                     ctx_.rank, o.peer, ec.message()));
    return;
  }
  applyBufferSizes(o.socket);
  // Before connect(): see tcp_socket_util.h. Only an explicit choice is
  // worth a warning; auto falls back to the kernel's default quietly.
  std::string refused;
  if (!applyCongestionControl(o.socket.native_handle(), o.congestion, &refused) &&
      o.attempts == 0 && o.streamIndex == 0 &&
      !congestionIsAuto(paramString("HCL_TCP_CONGESTION"))) {
    const log::Level level = congestionWarned_ ? log::Level::Info : log::Level::Warn;
    congestionWarned_ = true;
    if (log::enabled(level, log::Net)) {
      log::write(level, log::Net,
                 fmt::format("rank {}: HCL_TCP_CONGESTION refused on the link to rank {} ({}); using {}", ctx_.rank,
                             o.peer, refused, congestionInUse(o.socket.native_handle())));
    }
  }
  o.socket.set_option(tcp::no_delay(true), ec);
  ++o.attempts;
  o.socket.async_connect(o.endpoint, [this, &o](const asio::error_code& e) { onConnected(o, e); });
}

void MeshSetup::onConnected(Outgoing& o, const asio::error_code& ec) {
  if (closing_ || ec == asio::error::operation_aborted) return;
  if (ec) {
    retryLater(o, ec.message());
    return;
  }
  if (isConnectedToItself(o.socket)) {
    retryLater(o, "connected to itself (nothing listens on the peer's port)");
    return;
  }
  asio::async_write(o.socket, asio::buffer(o.hello), [this, &o](const asio::error_code& e, size_t) {
    if (closing_ || e == asio::error::operation_aborted) return;
    if (e) {
      retryLater(o, "sending hello: " + e.message());
      return;
    }
    o.done = true;
    log::info(log::Net, "rank {}: connected to rank {} via {} (stream {} of {})", ctx_.rank,
              o.peer, describeAddress(o.address), o.streamIndex, o.streamCount);
  });
}

void MeshSetup::retryLater(Outgoing& o, std::string why) {
  log::trace(log::Net, "rank {}: connecting to rank {} at {} failed ({}); retrying", ctx_.rank,
             o.peer, describeAddress(o.address), why);
  o.lastError = std::move(why);
  asio::error_code ignored;
  o.socket.close(ignored);
  o.retryTimer.expires_after(o.retryDelay);
  o.retryDelay = std::min(o.retryDelay * 2, kMaxRetryDelay);
  o.retryTimer.async_wait([this, &o](const asio::error_code& e) {
    if (closing_ || e) return;
    startConnect(o);
  });
}

// Waits for the listener to be readable, then accepts with accept4 rather
// than asio's accept, so the sockets are close-on-exec from the start.
void MeshSetup::armAccept(TcpListener& listener) {
  listener.acceptor.async_wait(tcp::acceptor::wait_read, [this, &listener](const asio::error_code& ec) {
    if (closing_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      fatal_ = systemError(fmt::format("rank {}: waiting for connections on {} failed: {}", ctx_.rank,
                                       describeAddress(listener.address), ec.message()));
      return;
    }
    for (;;) {
      tcp::socket socket(io_);
      tcp::endpoint peer;
      asio::error_code e;
      acceptCloseOnExec(listener.acceptor, socket, peer, e);
      if (e == asio::error::would_block || e == asio::error::try_again) break;
      if (acceptErrorIsTransient(e)) continue;
      if (e) {
        fatal_ = systemError(fmt::format("rank {}: accepting on {} failed: {}", ctx_.rank,
                                         describeAddress(listener.address), e.message()));
        return;
      }
      startHandshake(listener, std::move(socket));
    }
    armAccept(listener);
  });
}

void MeshSetup::startHandshake(const TcpListener& listener, tcp::socket socket) {
  auto h = std::make_unique<Handshake>(std::move(socket), listener);
  asio::error_code ec;
  const tcp::endpoint remote = h->socket.remote_endpoint(ec);
  if (!ec) h->remote = formatEndpoint(remote);
  Handshake& ref = *h;
  handshakes_.push_back(std::move(h));
  asio::async_read(ref.socket, asio::buffer(ref.hello),
                   [this, &ref](const asio::error_code& e, size_t) { onHello(ref, e); });
}

void MeshSetup::onHello(Handshake& h, const asio::error_code& ec) {
  if (closing_ || ec == asio::error::operation_aborted) return;
  h.finished = true;  // the loop drops it; a verified socket has been moved out by then
  if (ec) {
    log::warn(log::Net, "dropped connection from {}: closed before a complete hello ({})", h.remote,
              ec.message());
    return;
  }
  const Hello hello = decodeHello(h.hello);
  std::string why = helloMismatch(hello, ctx_);
  auto it = incoming_.find(hello.fromRank);
  if (why.empty() && it == incoming_.end()) {
    why = fmt::format("unexpected rank {}", hello.fromRank);
  } else if (why.empty()) {
    Incoming& in = it->second;
    if (in.streamCount != 0 && in.streamCount != hello.streamCount)
      why = fmt::format("rank {} announced {} streams, earlier {}", hello.fromRank,
                        hello.streamCount, in.streamCount);
    else if (in.streamCount != 0 && in.streams[static_cast<size_t>(hello.streamIndex)])
      why = in.streamCount == 1
                ? fmt::format("rank {} is already connected", hello.fromRank)
                : fmt::format("rank {} stream {} is already connected", hello.fromRank,
                              hello.streamIndex);
  }
  if (!why.empty()) {
    log::warn(log::Net, "dropped connection from {}: {}", h.remote, why);
    return;
  }
  Incoming& in = it->second;
  if (in.streamCount == 0) {
    in.streamCount = hello.streamCount;
    in.streams.resize(static_cast<size_t>(hello.streamCount));
  }
  in.streams[static_cast<size_t>(hello.streamIndex)] =
      Accepted{std::move(h.socket),
               fmt::format("tcp {} via {}", h.remote, h.listener->address.ifname), h.listener};
  log::info(log::Net, "rank {}: accepted rank {} from {} (stream {} of {})", ctx_.rank,
            hello.fromRank, h.remote, hello.streamIndex, hello.streamCount);
}

void MeshSetup::emitConnections(const std::shared_ptr<asio::io_context>& io,
                                std::vector<std::unique_ptr<Connection>>& out) {
  std::map<int, std::vector<std::unique_ptr<TcpStream>>> streams;  // by peer, in stream order
  std::map<int, std::set<std::string>> algorithms;                 // by peer, for the log
  auto add = [&](int peer, tcp::socket socket, std::string description) {
    const std::string inUse = congestionInUse(socket.native_handle());
    algorithms[peer].insert(inUse.empty() ? "unknown" : inUse);
    streams[peer].push_back(
        std::make_unique<TcpStream>(ctx_.rank, peer, std::move(socket), std::move(description)));
  };
  // outgoing_ holds each peer's streams in index order.
  for (auto& o : outgoing_) add(o->peer, std::move(o->socket), describeAddress(o->address));
  const std::vector<NetInterface> interfaces = incoming_.empty() ? std::vector<NetInterface>{}
                                                                 : listInterfaces();
  for (auto& [peer, in] : incoming_) {
    for (auto& accepted : in.streams) {
      // The listener chose for connections within this host; one from
      // elsewhere goes back to the kernel's default.
      const TcpListener& listener = *accepted->listener;
      if (congestionIsAuto(listener.congestionSetting) && !listener.kernelCongestion.empty() &&
          !isSameHostConnection(accepted->socket, interfaces))
        applyCongestionControl(accepted->socket.native_handle(), {listener.kernelCongestion});
      add(peer, std::move(accepted->socket), std::move(accepted->description));
    }
  }
  for (auto& [peer, list] : streams) {
    log::info(log::Net, "rank {}: link to rank {}: {} stream{}, congestion control {}", ctx_.rank,
              peer, list.size(), list.size() == 1 ? "" : "s",
              fmt::join(algorithms[peer], ","));
    out[static_cast<size_t>(peer)] =
        std::make_unique<TcpConnection>(ctx_.rank, peer, io, std::move(list));
  }
}

}  // namespace

Status connectTcpMesh(const TransportContext& ctx, const std::vector<int>& peers,
                      const std::shared_ptr<asio::io_context>& io,
                      std::vector<std::unique_ptr<TcpListener>>& listeners,
                      std::vector<std::unique_ptr<Connection>>& out, int streams) {
  MeshSetup setup(ctx, *io, listeners, std::clamp(streams, 1, kMaxStreams));
  HCL_TRY(setup.plan(peers));
  HCL_TRY(setup.run());
  if (out.size() < static_cast<size_t>(ctx.nranks)) out.resize(static_cast<size_t>(ctx.nranks));
  setup.emitConnections(io, out);
  return {};
}

}  // namespace hcl::tcp
