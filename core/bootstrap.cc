// The client side of the bootstrap: one connection per rank to the root.
#include "core/bootstrap.h"

#include <algorithm>
#include <chrono>

#include <asio.hpp>
#include <fmt/format.h>

#include "core/bootstrap_root.h"
#include "core/bootstrap_socket.h"
#include "core/bootstrap_wire.h"
#include "core/fd_limit.h"
#include "core/log.h"
#include "core/no_throw.h"

namespace hcl {
namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;

// Retry pacing while the root is not reachable yet.
constexpr auto kFirstRetry = 10ms;
constexpr auto kMaxRetry = 500ms;
// Binding rank 0's root may race with an earlier root on the same address
// that is still closing; retry that long before reporting the bind failure.
constexpr auto kBindRetryWindow = 5s;
constexpr int64_t kByeTimeoutMs = 1000;
// How long past its own timeout a joined rank waits for the root's verdict
// (at most the timeout again).
constexpr int64_t kJoinVerdictGraceMs = 5000;

bootwire::Secret secretOf(const UniqueIdContents& id) {
  bootwire::Secret secret;
  std::copy(std::begin(id.secret), std::end(id.secret), secret.begin());
  return secret;
}

struct Frame {
  bootwire::Kind kind{};
  std::vector<uint8_t> payload;
};

class BootstrapClient final : public Oob {
 public:
  BootstrapClient(const UniqueIdContents& id, const tcp::endpoint& root, int nranks, int rank, int64_t timeoutMs,
                  const std::atomic<bool>* abortFlag)
      : socket_(io_),
        root_(root),
        rootText_(formatEndpoint(root.address(), root.port())),
        secret_(secretOf(id)),
        nranks_(nranks),
        rank_(rank),
        timeoutMs_(timeoutMs),
        abortFlag_(abortFlag) {}

  ~BootstrapClient() override {
    if (joined_ && socket_.is_open()) {
      std::vector<uint8_t> bye;
      const std::string reason = leftFailing_.substr(0, bootwire::kMaxByeReasonBytes);
      bootwire::appendFrame(bye, bootwire::Kind::Bye,
                            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(reason.data()), reason.size()));
      WaitBudget budget{Deadline(kByeTimeoutMs), kByeTimeoutMs, nullptr, rootText_};
      Status st = sendAll(socket_, bye, budget, "saying bye");
      if (!st.ok()) log::trace(log::Bootstrap, "rank {}: {}", rank_, st.message());
    }
    std::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }

  void leaveFailed(const Status& why) override {
    if (broken_.ok() && !why.ok()) leftFailing_ = why.message();
  }

  Status join(const Deadline& deadline) {
    const WaitBudget budget{deadline, timeoutMs_, abortFlag_, rootText_};
    const std::string what = fmt::format("rank {} of {} joining", rank_, nranks_);
    auto delay = std::chrono::milliseconds(kFirstRetry);
    std::string lastFailure;
    while (true) {
      bool retry = false;
      Status st = attemptJoin(budget, retry);
      if (st.ok()) {
        joined_ = true;
        log::info(log::Bootstrap, "rank {} of {} joined the bootstrap at {}", rank_, nranks_, rootText_);
        return st;
      }
      if (!retry) return st.withContext(fmt::format("bootstrap rank {} of {}", rank_, nranks_));
      lastFailure = st.message();
      Status waited = pauseFor(delay, budget, what);
      if (!waited.ok()) return Status(waited.code(), waited.message() + "; last attempt: " + lastFailure);
      delay = std::min(delay * 2, std::chrono::milliseconds(kMaxRetry));
    }
  }

  Status allgather(const std::vector<uint8_t>& mine, std::vector<std::vector<uint8_t>>& all) override {
    if (!broken_.ok()) return broken_;
    Frame frame;
    Status st = round(bootwire::Kind::Blob, mine, frame);
    if (st.ok() && (!bootwire::decodeGather(frame.payload, all) || all.size() != static_cast<size_t>(nranks_))) {
      st = internalError(fmt::format("bootstrap root {} sent a malformed round result", rootText_));
    }
    if (!st.ok()) broken_ = st.withContext(fmt::format("bootstrap allgather (rank {} of {})", rank_, nranks_));
    return st.ok() ? st : broken_;
  }

  // The root hands each rank only the parts addressed to it.
  Status alltoall(const std::vector<std::vector<uint8_t>>& toEach, std::vector<std::vector<uint8_t>>& fromEach) override {
    if (!broken_.ok()) return broken_;
    if (toEach.size() != static_cast<size_t>(nranks_)) {
      return internalError(fmt::format("bootstrap alltoall: {} parts for {} ranks", toEach.size(), nranks_));
    }
    Frame frame;
    Status st = round(bootwire::Kind::Route, bootwire::encodeParts(toEach), frame);
    if (st.ok() && !bootwire::decodeParts(frame.payload, toEach.size(), fromEach)) {
      st = internalError(fmt::format("bootstrap root {} sent a malformed alltoall result", rootText_));
    }
    if (!st.ok()) broken_ = st.withContext(fmt::format("bootstrap alltoall (rank {} of {})", rank_, nranks_));
    return st.ok() ? st : broken_;
  }

 private:
  WaitBudget makeBudget() const { return WaitBudget{Deadline(timeoutMs_), timeoutMs_, abortFlag_, rootText_}; }

  // One connection attempt; `retry` tells whether a failure is worth another.
  Status attemptJoin(const WaitBudget& budget, bool& retry) {
    HCL_TRY(connectOnce(socket_, root_, budget, retry));
    bootwire::Hello hello;
    hello.secret = secret_;
    hello.nranks = nranks_;
    hello.rank = rank_;
    const auto helloBytes = bootwire::encodeHello(hello);
    HCL_TRY(sendAll(socket_, helloBytes, budget, "sending the hello"));
    // The root fails the join, naming the ranks that never came, when its
    // own timeout runs out; it counts from the first join, so a little (or,
    // where the root started late, a little more) after this rank's. Its
    // word is worth the wait: without it every rank would only know that
    // time ran out, and rank 0, giving up first, would stop the root.
    const auto grace = std::chrono::milliseconds(std::min<int64_t>(budget.timeoutMs, kJoinVerdictGraceMs));
    const WaitBudget untilVerdict{budget.deadline.later(grace), budget.timeoutMs, budget.abortFlag, budget.peer};
    Frame frame;
    size_t received = 0;
    Status st = readFrame(untilVerdict, "waiting for the other ranks to join", frame, &received);
    if (!st.ok()) {
      // A root that closes without a word before answering is most likely an
      // earlier root on the same address that is shutting down.
      retry = st.code() == hclSystemError && received == 0 && !budget.deadline.expired() &&
              !(abortFlag_ != nullptr && abortFlag_->load());
      return st;
    }
    if (frame.kind == bootwire::Kind::JoinOk) {
      if (frame.payload.size() != 4 || bootwire::getU32(frame.payload.data()) != static_cast<uint32_t>(nranks_))
        return internalError(fmt::format("bootstrap root {} confirmed the join with a bad message", rootText_));
      return Status::success();
    }
    Status remote = remoteErrorFrom(frame);
    bootwire::ErrorKind kind{};
    std::string text;
    retry = frame.kind == bootwire::Kind::Error && bootwire::decodeError(frame.payload, kind, text) &&
            kind == bootwire::ErrorKind::Retry;
    return remote;
  }

  // Sends this rank's contribution and reads the round's result frame.
  Status round(bootwire::Kind kind, const std::vector<uint8_t>& mine, Frame& frame) {
    const WaitBudget budget = makeBudget();
    std::vector<uint8_t> out;
    out.reserve(bootwire::kFrameHeaderBytes + mine.size());
    bootwire::appendFrame(out, kind, mine);
    HCL_TRY(sendAll(socket_, out, budget, "sending this rank's contribution"));
    HCL_TRY(readFrame(budget, "waiting for the other ranks' contributions", frame));
    const auto result = kind == bootwire::Kind::Route ? bootwire::Kind::Parts : bootwire::Kind::Gather;
    if (frame.kind != result) return remoteErrorFrom(frame);
    return Status::success();
  }

  Status readFrame(const WaitBudget& budget, std::string_view what, Frame& frame, size_t* received = nullptr) {
    std::array<uint8_t, bootwire::kFrameHeaderBytes> header{};
    HCL_TRY(recvAll(socket_, header, budget, what, received));
    const auto h = bootwire::decodeFrameHeader(header);
    if (h.length > bootwire::maxFrameBytesFromRoot(h.kind)) {
      return internalError(fmt::format("bootstrap root {} sent a malformed message (kind {}, {} bytes)", rootText_,
                                       static_cast<uint32_t>(h.kind), h.length));
    }
    frame.kind = h.kind;
    // The buffer grows with the bytes that arrive, not with what the header claims.
    constexpr size_t kPiece = size_t{64} << 20;
    frame.payload.clear();
    while (frame.payload.size() < h.length) {
      const size_t have = frame.payload.size();
      frame.payload.resize(have + std::min<uint64_t>(kPiece, h.length - have));
      HCL_TRY(recvAll(socket_, std::span(frame.payload).subspan(have), budget, what));
    }
    return {};
  }

  Status remoteErrorFrom(const Frame& frame) const {
    bootwire::ErrorKind kind{};
    std::string text;
    if (frame.kind != bootwire::Kind::Error || !bootwire::decodeError(frame.payload, kind, text))
      return internalError(fmt::format("bootstrap root {} sent an unexpected message (kind {})", rootText_,
                                       static_cast<uint32_t>(frame.kind)));
    return remoteError(fmt::format("bootstrap root {} reported: {}", rootText_, text));
  }

  asio::io_context io_;
  tcp::socket socket_;
  tcp::endpoint root_;
  std::string rootText_;
  bootwire::Secret secret_;
  int nranks_;
  int rank_;
  int64_t timeoutMs_;
  const std::atomic<bool>* abortFlag_;
  bool joined_ = false;
  Status broken_;  // sticky: a failed round leaves the stream out of step
  std::string leftFailing_;  // leaveFailed()'s reason, sent with the bye
};

// With HCL_COMM_ID, rank 0 hosts the root on the agreed address.
Status startRootForRank0(const UniqueIdContents& id, const asio::ip::address& ip, const Deadline& deadline,
                         int64_t timeoutMs, const std::atomic<bool>* abortFlag) {
  const bootwire::Secret secret = secretOf(id);
  const WaitBudget budget{deadline, timeoutMs, abortFlag, formatEndpoint(ip, id.rootPort)};
  const auto giveUp = Clock::now() + kBindRetryWindow;
  while (true) {
    bool inUse = false;
    Status st = startBootstrapRoot(ip, id.rootPort, secret, nullptr, &inUse);
    if (st.ok() || !inUse || Clock::now() >= giveUp) return st;
    HCL_TRY(pauseFor(50ms, budget, "waiting for the root address to become free"));
  }
}

Status connectBootstrapThrowing(const hclUniqueId& id, int nranks, int rank, int64_t timeoutMs,
                                const std::atomic<bool>* abortFlag, std::unique_ptr<Oob>& out) {
  UniqueIdContents contents;
  HCL_TRY(decodeUniqueId(id, contents));
  if (nranks < 1 || nranks > bootwire::kMaxRanks || rank < 0 || rank >= nranks)
    return invalidArgument(fmt::format("invalid rank {} for nranks {}", rank, nranks));
  std::error_code ec;
  const auto ip = asio::ip::make_address(contents.rootIp, ec);
  if (ec) return invalidArgument(fmt::format("hclUniqueId holds an unusable root address {}", contents.rootIp));
  const Deadline deadline(timeoutMs);
  const bool hostsRoot = contents.rootStartedByRank0 && rank == 0;
  // A root in this process holds a socket per rank until they all joined.
  constexpr size_t kBesideRoot = 64;
  const bool rootHere = hostsRoot || bootstrapRootRunning(contents.rootPort);
  DescriptorClaim claim;
  if (const Status room = ensureDescriptorRoom(rank, kBesideRoot,
                                               rootHere ? "the bootstrap root in this process" : "joining the bootstrap",
                                               claim, rootHere ? static_cast<size_t>(nranks) : 0);
      !room.ok()) {
    log::warn(log::Bootstrap, "{}", room.message());
  }
  if (hostsRoot) HCL_TRY(startRootForRank0(contents, ip, deadline, timeoutMs, abortFlag));

  auto client = std::make_unique<BootstrapClient>(contents, tcp::endpoint(ip, contents.rootPort), nranks, rank,
                                                  timeoutMs, abortFlag);
  if (Status joined = client->join(deadline); !joined.ok()) {
    // No communicator forms without rank 0. Its root would hold the agreed
    // address (and keep the other ranks waiting) until its join timeout, or
    // for ever without one, so a retry in this process could not bind it.
    if (hostsRoot) (void)stopBootstrapRoot(contents.rootPort, secretOf(contents));
    return joined;
  }
  out = std::move(client);
  return Status::success();
}

}  // namespace

Status Oob::alltoall(const std::vector<std::vector<uint8_t>>& toEach, std::vector<std::vector<uint8_t>>& fromEach) {
  if (toEach.size() != static_cast<size_t>(size())) {
    return internalError(fmt::format("alltoall: {} parts for {} ranks", toEach.size(), size()));
  }
  std::vector<std::vector<uint8_t>> all;
  HCL_TRY(allgather(bootwire::encodeParts(toEach), all));
  fromEach.assign(all.size(), {});
  std::vector<bootwire::PartView> parts;
  for (size_t r = 0; r < all.size(); ++r) {
    if (!bootwire::decodeParts(all[r], toEach.size(), parts)) {
      return internalError(fmt::format("alltoall: malformed parts from rank {}", r));
    }
    for (const bootwire::PartView& p : parts) {
      if (p.rank == static_cast<uint32_t>(rank())) fromEach[r].assign(p.bytes.begin(), p.bytes.end());
    }
  }
  return {};
}

void releaseUnusedUniqueId(const hclUniqueId& id) {
  UniqueIdContents contents;
  if (!decodeUniqueId(id, contents).ok() || contents.rootStartedByRank0) return;
  if (stopBootstrapRoot(contents.rootPort, secretOf(contents))) {
    log::info(log::Bootstrap, "stopped the root of an unused id on port {}", contents.rootPort);
  }
}

Status connectBootstrap(const hclUniqueId& id, int nranks, int rank, int64_t timeoutMs,
                        const std::atomic<bool>* abortFlag, std::unique_ptr<Oob>& out) {
  return noThrow("bootstrap",
                 [&] { return connectBootstrapThrowing(id, nranks, rank, timeoutMs, abortFlag, out); });
}

}  // namespace hcl
