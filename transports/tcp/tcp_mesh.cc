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

#include "core/deadline.h"
#include "core/log.h"
#include "transports/link.h"
#include "transports/tcp/tcp_connection.h"
#include "transports/tcp/tcp_hello.h"
#include "transports/tcp/tcp_socket_util.h"
#include "transports/tcp/tcp_stream.h"

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

// A connection we make to a higher-ranked peer.
struct Outgoing {
  explicit Outgoing(asio::io_context& io) : socket(io), retryTimer(io) {}
  int peer = -1;
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

// A lower-ranked peer's connection, hello verified.
struct Accepted {
  tcp::socket socket;
  std::string description;
};

class MeshSetup {
 public:
  MeshSetup(const TransportContext& ctx, asio::io_context& io,
            std::vector<std::unique_ptr<TcpListener>>& listeners)
      : ctx_(ctx), io_(io), listeners_(listeners) {}

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
  std::map<int, std::optional<Accepted>> incoming_;  // expected lower ranks
  std::vector<std::unique_ptr<Handshake>> handshakes_;
  Status fatal_;
  bool closing_ = false;  // set once the loop ends: completion handlers then do nothing
};

Status MeshSetup::plan(const std::vector<int>& peers) {
  const int rank = ctx_.rank;
  if (ctx_.peers == nullptr || ctx_.links == nullptr ||
      ctx_.peers->size() < static_cast<size_t>(ctx_.nranks) ||
      ctx_.links->size() < static_cast<size_t>(ctx_.nranks)) {
    return internalError(fmt::format(
        "rank {}: TCP connect needs the peer infos and links of all {} ranks", rank, ctx_.nranks));
  }
  for (int peer : std::set<int>(peers.begin(), peers.end())) {
    if (peer < 0 || peer >= ctx_.nranks)
      return invalidArgument(
          fmt::format("rank {}: TCP peer rank {} is outside [0, {})", rank, peer, ctx_.nranks));
    if (peer == rank) continue;
    if (peer < rank) {
      incoming_.emplace(peer, std::nullopt);
      continue;
    }
    const std::vector<NetAddress>& addresses = (*ctx_.peers)[static_cast<size_t>(peer)].addresses;
    const int index = (*ctx_.links)[static_cast<size_t>(peer)].listenerAddress;
    if (index < 0 || static_cast<size_t>(index) >= addresses.size()) {
      return internalError(fmt::format(
          "rank {}: link to rank {} names listener address {}, but rank {} published {} addresses",
          rank, peer, index, peer, addresses.size()));
    }
    auto o = std::make_unique<Outgoing>(io_);
    o->peer = peer;
    o->address = addresses[static_cast<size_t>(index)];
    asio::error_code ec;
    const asio::ip::address ip = asio::ip::make_address(o->address.ip, ec);
    if (ec) {
      return invalidArgument(fmt::format("rank {}: rank {} published the invalid address '{}'",
                                         rank, peer, o->address.ip));
    }
    o->endpoint = tcp::endpoint(ip, o->address.port);
    o->hello = encodeHello(makeHello(ctx_, peer));
    outgoing_.push_back(std::move(o));
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
                     [](const auto& in) { return in.second.has_value(); });
}

std::string MeshSetup::missingPeers() const {
  std::vector<std::string> parts;
  for (const auto& o : outgoing_) {
    if (o->done) continue;
    parts.push_back(fmt::format("rank {} (connecting to {}: {}, {} attempts)", o->peer,
                                describeAddress(o->address), o->lastError, o->attempts));
  }
  const std::vector<NetAddress>& ours = (*ctx_.peers)[static_cast<size_t>(ctx_.rank)].addresses;
  for (const auto& [peer, accepted] : incoming_) {
    if (accepted) continue;
    const int index = (*ctx_.links)[static_cast<size_t>(peer)].listenerAddress;
    const std::string where = index >= 0 && static_cast<size_t>(index) < ours.size()
                                  ? describeAddress(ours[static_cast<size_t>(index)])
                                  : std::string("our listener");
    parts.push_back(fmt::format("rank {} (has not connected to {})", peer, where));
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
  o.socket.open(o.endpoint.protocol(), ec);
  if (ec) {
    fatal_ = systemError(fmt::format("rank {}: cannot create a socket to connect to rank {}: {}",
                                     ctx_.rank, o.peer, ec.message()));
    return;
  }
  applyBufferSizes(o.socket);
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
  asio::async_write(o.socket, asio::buffer(o.hello), [this, &o](const asio::error_code& e, size_t) {
    if (closing_ || e == asio::error::operation_aborted) return;
    if (e) {
      retryLater(o, "sending hello: " + e.message());
      return;
    }
    o.done = true;
    log::info(log::Net, "rank {}: connected to rank {} via {}", ctx_.rank, o.peer,
              describeAddress(o.address));
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

void MeshSetup::armAccept(TcpListener& listener) {
  listener.acceptor.async_accept([this, &listener](const asio::error_code& ec, tcp::socket socket) {
    if (closing_ || ec == asio::error::operation_aborted) return;
    if (ec == asio::error::connection_aborted || ec == asio::error::interrupted) {
      armAccept(listener);
      return;
    }
    if (ec) {
      fatal_ = systemError(fmt::format("rank {}: accepting on {} failed: {}", ctx_.rank,
                                       describeAddress(listener.address), ec.message()));
      return;
    }
    startHandshake(listener, std::move(socket));
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
  if (why.empty() && it == incoming_.end())
    why = fmt::format("unexpected rank {}", hello.fromRank);
  else if (why.empty() && it->second.has_value())
    why = fmt::format("rank {} is already connected", hello.fromRank);
  if (!why.empty()) {
    log::warn(log::Net, "dropped connection from {}: {}", h.remote, why);
    return;
  }
  it->second = Accepted{std::move(h.socket),
                        fmt::format("tcp {} via {}", h.remote, h.listener->address.ifname)};
  log::info(log::Net, "rank {}: accepted rank {} from {}", ctx_.rank, hello.fromRank, h.remote);
}

void MeshSetup::emitConnections(const std::shared_ptr<asio::io_context>& io,
                                std::vector<std::unique_ptr<Connection>>& out) {
  auto emit = [&](int peer, tcp::socket socket, std::string description) {
    std::vector<std::unique_ptr<TcpStream>> streams;
    streams.push_back(
        std::make_unique<TcpStream>(ctx_.rank, peer, std::move(socket), std::move(description)));
    out[static_cast<size_t>(peer)] =
        std::make_unique<TcpConnection>(ctx_.rank, peer, io, std::move(streams));
  };
  for (auto& o : outgoing_) emit(o->peer, std::move(o->socket), describeAddress(o->address));
  for (auto& [peer, accepted] : incoming_)
    emit(peer, std::move(accepted->socket), std::move(accepted->description));
}

}  // namespace

Status connectTcpMesh(const TransportContext& ctx, const std::vector<int>& peers,
                      const std::shared_ptr<asio::io_context>& io,
                      std::vector<std::unique_ptr<TcpListener>>& listeners,
                      std::vector<std::unique_ptr<Connection>>& out) {
  MeshSetup setup(ctx, *io, listeners);
  HCL_TRY(setup.plan(peers));
  HCL_TRY(setup.run());
  if (out.size() < static_cast<size_t>(ctx.nranks)) out.resize(static_cast<size_t>(ctx.nranks));
  setup.emitConnections(io, out);
  return {};
}

}  // namespace hcl::tcp
