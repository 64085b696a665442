#include "transports/peer_watch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/deadline.h"
#include "core/log.h"
#include "core/wire_order.h"
#include "transports/side_socket.h"

namespace hcl {
namespace {

constexpr uint32_t kHelloMagic = 0x57434c48;  // "HLCW"
constexpr size_t kHelloBytes = 16;            // magic, rank (4 bytes each), communicator tag (8), little-endian
constexpr uint8_t kGoodbye = 'G';  // destroyed on purpose
constexpr uint8_t kAborted = 'A';   // aborted (hclCommAbort, or a failure elsewhere)
constexpr auto kLookEvery = std::chrono::milliseconds(5);
// Data the peer sent just before it ended may still be on its way (its
// kernel sends what it holds after the process is gone): a death counts
// once the link has stayed still this long since.
constexpr auto kGrace = std::chrono::milliseconds(200);

std::array<uint8_t, kHelloBytes> helloOf(int rank, uint64_t commTag) {
  std::array<uint8_t, kHelloBytes> h{};
  storeLittleEndian(h.data(), kHelloMagic);
  storeLittleEndian(h.data() + 4, static_cast<uint32_t>(rank));
  storeLittleEndian(h.data() + 8, commTag);
  return h;
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The reason that follows an abort word: a 2-byte little-endian length,
// then the text. It was sent in one piece, so it is there or about to be;
// what has not come within a few milliseconds is left out.
std::string readReason(int fd) {
  uint8_t buffer[2 + PeerWatch::kMostReasonBytes];
  size_t got = 0, want = 2;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  while (got < want && std::chrono::steady_clock::now() < end) {
    const ssize_t n = ::recv(fd, buffer + got, want - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
      if (got == 2) want = 2 + std::min<size_t>(loadLittleEndian<uint16_t>(buffer), PeerWatch::kMostReasonBytes);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      break;
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  return got > 2 ? std::string(reinterpret_cast<const char*>(buffer) + 2, got - 2) : std::string();
}

struct Outgoing {
  int peer = -1;
  int fd = -1;
  bool connected = false;
  size_t sent = 0;
};

struct Incoming {
  int fd = -1;
  std::array<uint8_t, kHelloBytes> hello{};
  size_t got = 0;
};

// Where a rank listens: the address of its NIC `nic` where that is one,
// else its first address; empty: none.
std::string addressOf(const PeerInfo& rank, int nic) {
  if (nic >= 0 && static_cast<size_t>(nic) < rank.addresses.size()) return rank.addresses[static_cast<size_t>(nic)].ip;
  if (!rank.rescueIp.empty()) return rank.rescueIp;
  return rank.addresses.empty() ? std::string() : rank.addresses.front().ip;
}

// The port a higher-ranked peer's preparedFor() carried; 0: none, or malformed.
uint16_t portIn(const std::vector<uint8_t>& blob) {
  return blob.size() == 2 ? loadLittleEndian<uint16_t>(blob.data()) : 0;
}

}  // namespace

PeerWatch::PeerWatch(int rank, int nranks, std::string label)
    : rank_(rank), label_(std::move(label)), watched_(static_cast<size_t>(nranks)) {}

PeerWatch::~PeerWatch() { close(); }

Status PeerWatch::prepare(const TransportContext& ctx, const std::vector<int>& peers,
                          FunctionRef<int(int)> listenerNic) {
  std::lock_guard lock(mutex_);
  bool anyBelow = false;
  for (int peer : peers) {
    const PeerInfo& p = (*ctx.peers)[static_cast<size_t>(peer)];
    Watched& w = watched_[static_cast<size_t>(peer)];
    w.who = fmt::format("rank {} (pid {} on host {})", peer, p.pid, p.hostId);
    w.listenerIp = addressOf((*ctx.peers)[static_cast<size_t>(std::max(peer, rank_))], listenerNic(peer));
    if (w.listenerIp.empty()) {
      log::info(log::Net, "rank {}: no address for a {} peer watch with rank {}: its death shows at the timeout",
                rank_, label_, peer);
      continue;
    }
    peers_.push_back(peer);
    anyBelow |= peer < rank_;
  }
  if (!anyBelow || listenFd_ >= 0) return {};
  return side::openListener(fmt::format("rank {}: {} peer watch listen", rank_, label_), &listenFd_, &listenPort_);
}

std::vector<uint8_t> PeerWatch::preparedFor(int peer) const {
  std::lock_guard lock(mutex_);
  if (peer >= rank_ || listenFd_ < 0 || watched_[static_cast<size_t>(peer)].listenerIp.empty()) return {};
  std::vector<uint8_t> out(2);
  storeLittleEndian(out.data(), listenPort_);
  return out;
}

Status PeerWatch::connect(const TransportContext& ctx, FunctionRef<std::vector<uint8_t>(int)> preparedBy) {
  const std::string where = fmt::format("rank {}: {} peer watch", rank_, label_);
  std::vector<Outgoing> outgoing;
  std::vector<int> expected;  // lower-ranked peers that connect here
  const auto mine = helloOf(rank_, ctx.commTag);
  // Whatever is not handed to watched_ closes on the way out, error or not.
  std::vector<Incoming> incoming;
  struct CloseLeftovers {
    std::vector<Outgoing>& out;
    std::vector<Incoming>& in;
    ~CloseLeftovers() {
      for (Outgoing& o : out) closeFd(o.fd);
      for (Incoming& i : in) closeFd(i.fd);
    }
  } leftovers{outgoing, incoming};
  std::vector<int> peers;
  {
    std::lock_guard lock(mutex_);
    peers = peers_;
  }
  for (int peer : peers) {
    if (peer < rank_) {
      expected.push_back(peer);
      continue;
    }
    const std::string& ip = watched_[static_cast<size_t>(peer)].listenerIp;
    const uint16_t port = portIn(preparedBy(peer));
    if (port == 0) return internalError(fmt::format("{}: rank {} sent no port to watch it by", where, peer));
    Outgoing& o = outgoing.emplace_back();
    o.peer = peer;
    HCL_TRY(side::startConnect(ip, port, fmt::format("{} of rank {} at {} port {}", where, peer, ip, port), &o.fd,
                               &o.connected));
  }
  const Deadline deadline(ctx.timeoutMs);
  while (!outgoing.empty() || !expected.empty()) {
    bool moved = false;
    for (auto it = outgoing.begin(); it != outgoing.end();) {
      const std::string to = fmt::format("{} of rank {}", where, it->peer);
      if (!it->connected) HCL_TRY(side::checkConnect(it->fd, to, &it->connected));
      if (it->connected) HCL_TRY(side::sendSome(it->fd, mine.data(), mine.size(), &it->sent, to));
      if (it->sent < mine.size()) {
        ++it;
        continue;
      }
      std::lock_guard lock(mutex_);
      if (!closed_) watched_[static_cast<size_t>(it->peer)].fd = std::exchange(it->fd, -1);
      closeFd(it->fd);
      it = outgoing.erase(it);
      moved = true;
    }
    if (listenFd_ >= 0 && !expected.empty()) {
      int fd = -1;
      HCL_TRY(side::accept(listenFd_, where, &fd));
      if (fd >= 0) {
        incoming.push_back({fd, {}, 0});
        moved = true;
      }
    }
    for (auto it = incoming.begin(); it != incoming.end();) {
      Status read = side::receiveSome(it->fd, it->hello.data(), it->hello.size(), &it->got, where);
      if (read.ok() && it->got < it->hello.size()) {
        ++it;
        continue;
      }
      const int from = static_cast<int>(loadLittleEndian<uint32_t>(it->hello.data() + 4));
      const auto wanted = std::find(expected.begin(), expected.end(), from);
      if (!read.ok() || loadLittleEndian<uint32_t>(it->hello.data()) != kHelloMagic ||
          loadLittleEndian<uint64_t>(it->hello.data() + 8) != ctx.commTag || wanted == expected.end()) {
        // A scanner, another communicator's stray, or a peer that broke off:
        // the deadline covers a peer that never comes.
        log::info(log::Net, "{}: dropped a connection that is no expected peer's ({})", where,
                  read.ok() ? "unknown hello" : read.message());
        closeFd(it->fd);
      } else {
        std::lock_guard lock(mutex_);
        if (!closed_) watched_[static_cast<size_t>(from)].fd = std::exchange(it->fd, -1);
        closeFd(it->fd);
        expected.erase(wanted);
      }
      it = incoming.erase(it);
      moved = true;
    }
    if (moved) continue;
    if (ctx.abortFlag && ctx.abortFlag->load(std::memory_order_acquire)) {
      return systemError(fmt::format("{}: aborted while connecting", where));
    }
    if (deadline.expired()) {
      std::vector<int> missing = expected;
      for (const Outgoing& o : outgoing) missing.push_back(o.peer);
      std::sort(missing.begin(), missing.end());
      return systemError(fmt::format("{}: no watch connection with rank(s) {} within {} ms", where,
                                     fmt::join(missing, ","), ctx.timeoutMs));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::lock_guard lock(mutex_);
  closeFd(listenFd_);
  return {};
}

Status PeerWatch::check(int peer, bool linkMoved) {
  std::lock_guard lock(mutex_);
  Watched& w = watched_[static_cast<size_t>(peer)];
  const auto abortedError = [&] {
    return remoteError(fmt::format("rank {}: {} aborted (its {} peer watch says){}", rank_, w.who, label_,
                                   w.abortReason.empty() ? "" : ", failing: " + w.abortReason));
  };
  if (w.aborted) return abortedError();
  if (w.fd < 0) return {};
  const Clock::time_point now = Clock::now();
  if (w.endedAt) {
    if (linkMoved) w.endedAt = now;
    if (now - *w.endedAt < kGrace) return {};
    return remoteError(fmt::format("rank {}: {} ended without closing its communicator (killed or crashed?): its "
                                   "{} peer-watch connection closed",
                                   rank_, w.who, label_));
  }
  if (now < w.nextLook) return {};
  w.nextLook = now + kLookEvery;
  uint8_t word = 0;
  const ssize_t n = ::recv(w.fd, &word, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return {};
  if (n == 1 && word == kGoodbye) {
    // Destroyed on purpose: the transport and the timeout tell the rest.
    closeFd(w.fd);
    return {};
  }
  if (n == 1 && word == kAborted) {
    w.aborted = true;
    w.abortReason = readReason(w.fd);
    closeFd(w.fd);
    return abortedError();
  }
  w.endedAt = now;
  return {};
}

void PeerWatch::close() {
  std::lock_guard lock(mutex_);
  closeLocked(kGoodbye, {});
}

void PeerWatch::abort(const std::string& why) {
  std::lock_guard lock(mutex_);
  closeLocked(kAborted, why);
}

void PeerWatch::closeLocked(uint8_t word, const std::string& why) {
  if (closed_) return;
  closed_ = true;
  closeFd(listenFd_);
  std::vector<uint8_t> message{word};
  if (word == kAborted) {
    const std::string text = shortenedAbortReason(why, kMostReasonBytes);
    message.resize(3 + text.size());
    storeLittleEndian(message.data() + 1, static_cast<uint16_t>(text.size()));
    std::memcpy(message.data() + 3, text.data(), text.size());
  }
  for (Watched& w : watched_) {
    if (w.fd < 0) continue;
    // One send, into an idle connection's empty buffer: it all goes.
    (void)::send(w.fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    closeFd(w.fd);
  }
}

bool PeerWatch::watching(int peer) const {
  std::lock_guard lock(mutex_);
  return watched_[static_cast<size_t>(peer)].fd >= 0;
}

}  // namespace hcl
