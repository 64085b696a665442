#include "transports/ofi/ofi_endpoint.h"

#include <fmt/format.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/log.h"
#include "transports/ofi/ofi_tags.h"

namespace hcl::ofi {
namespace {

constexpr size_t kLargestPiece = size_t{1} << 30;
constexpr int kCompletionsPerRead = 16;
constexpr int kReadsPerProgress = 64;
// How long closing lets the provider put the abort notices on the wire.
constexpr auto kNoticeFlush = std::chrono::milliseconds(5);

struct InfoDeleter {
  const FabricApi* api;
  void operator()(fi_info* info) const {
    if (info) api->freeinfo(info);
  }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

size_t pieceCount(size_t bytes, size_t largest) { return bytes == 0 ? 1 : (bytes + largest - 1) / largest; }

void closeFid(fid_mr*& mr) {
  if (mr) fi_close(&mr->fid);
  mr = nullptr;
}

// Why a provider cannot carry HCL's messages; empty when it can.
std::string unsuitable(const fi_info& info, int nranks) {
  if (!info.domain_attr || info.domain_attr->cq_data_size < sizeof(uint32_t)) {
    return fmt::format("{} bytes of completion data, HCL needs 4", info.domain_attr ? info.domain_attr->cq_data_size : 0);
  }
  const uint64_t format = info.ep_attr ? info.ep_attr->mem_tag_format : 0;
  if (!tags::fits(nranks, format)) {
    return fmt::format("tags of {} bits, too few for {} ranks", tags::usableTagBits(format), nranks);
  }
  return {};
}

}  // namespace

struct Endpoint::Op {
  fi_context2 context{};  // first: the provider's scratch in FI_CONTEXT mode; completions point here
  Transfer* transfer = nullptr;  // null: the receive of the peer's abort notice
  int peer = -1;
  size_t offset = 0;
  size_t bytes = 0;
  uint64_t tag = 0;
  bool last = true;  // the last piece of its transfer
  fid_mr* mr = nullptr;
};

Endpoint::Endpoint(const FabricApi& api, int rank, int nranks)
    : api_(api), rank_(rank), peers_(static_cast<size_t>(std::max(nranks, 0))) {}

Endpoint::~Endpoint() {
  std::lock_guard lock(mutex_);
  closeLocked(Notice::None);
}

// The provider entries HCL may use for a request, in libfabric's order.
Status Endpoint::listCandidates(const FabricApi& api, const OfiRequest& request, int rank, int nranks,
                                CandidateVisitor visit) {
  InfoPtr hints(api.dupinfo(nullptr), InfoDeleter{&api});
  if (!hints) return systemError("libfabric: fi_allocinfo failed");
  hints->caps = FI_TAGGED;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode =
      FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  // Some providers (psm2, psm3) lay out their tags by it.
  hints->domain_attr->cq_data_size = sizeof(uint32_t);
  // Freed by fi_freeinfo with the rest of the hints.
  if (!request.provider.empty()) hints->fabric_attr->prov_name = strdup(request.provider.c_str());
  fi_info* raw = nullptr;
  const int rc = api.getinfo(kFabricApiVersion, nullptr, nullptr, 0, hints.get(), &raw);
  InfoPtr list(raw, InfoDeleter{&api});
  if (rc == -FI_ENODATA) return {};
  if (rc != 0) return systemError("libfabric fi_getinfo: " + api.errorText(rc));
  for (const fi_info* info = list.get(); info; info = info->next) {
    const char* name = info->fabric_attr && info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "";
    if (!providerWanted(name, request)) continue;
    if (const std::string why = unsuitable(*info, nranks); !why.empty()) {
      log::info(log::Net, "rank {}: libfabric provider '{}' passed over: {}", rank, name, why);
      continue;
    }
    if (!visit(*info)) break;
  }
  return {};
}

Status Endpoint::open(const FabricApi& api, const OfiRequest& request, int rank, int nranks,
                      std::unique_ptr<Endpoint>& out, bool* found) {
  *found = false;
  Status firstFailure;
  HCL_TRY(listCandidates(api, request, rank, nranks, [&](const fi_info& info) {
    auto ep = std::make_unique<Endpoint>(api, rank, nranks);
    if (Status s = ep->openFrom(info); !s.ok()) {
      if (firstFailure.ok()) firstFailure = std::move(s);
      return true;
    }
    *found = true;
    out = std::move(ep);
    return false;
  }));
  return *found ? Status{} : firstFailure;
}

Status Endpoint::openPerNic(const FabricApi& api, const OfiRequest& request, int rank, int nranks,
                            const std::vector<NetAddress>& nics, std::vector<OpenedEndpoint>& out) {
  Status firstFailure;
  std::vector<std::string> taken;  // "provider/nic" or "provider/fabric/domain"
  HCL_TRY(listCandidates(api, request, rank, nranks, [&](const fi_info& info) {
    const std::string provider = info.fabric_attr->prov_name ? info.fabric_attr->prov_name : "";
    const int nic = nicOf(info, nics);
    // A software provider on an address HCL does not use (loopback, link-local) adds nothing.
    if (nic < 0 && isSoftwareProvider(provider) && coreProvider(provider) != "shm") return true;
    const std::string key = nic >= 0 ? fmt::format("{}/{}", provider, nic)
                                     : fmt::format("{}/{}/{}", provider, info.fabric_attr->name ? info.fabric_attr->name : "",
                                                   info.domain_attr->name ? info.domain_attr->name : "");
    if (std::find(taken.begin(), taken.end(), key) != taken.end()) return true;
    auto ep = std::make_unique<Endpoint>(api, rank, nranks);
    if (Status s = ep->openFrom(info); !s.ok()) {
      // Asked for by name, a NIC left out is worth a warning: its links fall back to TCP.
      if (request.mode == OfiMode::On) {
        log::warn(log::Net, "rank {}: {}; links on that NIC use TCP", rank, s.message());
      } else {
        log::info(log::Net, "rank {}: {}", rank, s.message());
      }
      if (firstFailure.ok()) firstFailure = std::move(s);
      return true;
    }
    ep->nicName_ = nic >= 0 ? nics[static_cast<size_t>(nic)].ifname : std::string();
    taken.push_back(key);
    out.push_back({std::move(ep), nic});
    return out.size() < kMostEndpoints;
  }));
  return out.empty() ? firstFailure : Status{};
}

// The NIC whose address is the entry's source address; -1: none.
int Endpoint::nicOf(const fi_info& info, const std::vector<NetAddress>& nics) {
  const bool socketAddress = info.addr_format == FI_SOCKADDR || info.addr_format == FI_SOCKADDR_IN ||
                        info.addr_format == FI_SOCKADDR_IN6;
  if (!info.src_addr || !socketAddress) return -1;
  char text[INET6_ADDRSTRLEN] = "";
  const auto* sa = static_cast<const sockaddr*>(info.src_addr);
  if (sa->sa_family == AF_INET && info.src_addrlen >= sizeof(sockaddr_in)) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof text);
  } else if (sa->sa_family == AF_INET6 && info.src_addrlen >= sizeof(sockaddr_in6)) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof text);
  } else {
    return -1;
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    if (nics[i].ip == text) return static_cast<int>(i);
  }
  return -1;
}

Status Endpoint::openFrom(const fi_info& info) {
  provider_ = info.fabric_attr->prov_name ? info.fabric_attr->prov_name : "";
  fabric_ = info.fabric_attr->name ? info.fabric_attr->name : "";
  const size_t largest = info.ep_attr ? info.ep_attr->max_msg_size : 0;
  maxPieceBytes_ = largest == 0 ? kLargestPiece : std::min(largest, kLargestPiece);
  const uint64_t mr = static_cast<uint64_t>(info.domain_attr->mr_mode);
  registerBuffers_ = (mr & FI_MR_LOCAL) != 0;
  bindRegistrations_ = (mr & FI_MR_ENDPOINT) != 0;
  providerKeys_ = (mr & FI_MR_PROV_KEY) != 0;
  const auto failed = [&](const char* what, int rc) {
    closeLocked(Notice::None);
    return systemError(fmt::format("rank {}: libfabric {} on provider '{}': {}", rank_, what, provider_,
                                   api_.errorText(rc)));
  };
  if (int rc = api_.fabric(info.fabric_attr, &fabricFid_, nullptr)) return failed("fi_fabric", rc);
  fi_info* mutableInfo = const_cast<fi_info*>(&info);  // libfabric's API takes it non-const and does not change it
  if (int rc = fi_domain(fabricFid_, mutableInfo, &domain_, nullptr)) return failed("fi_domain", rc);
  fi_av_attr avAttr{};
  avAttr.type = FI_AV_UNSPEC;
  avAttr.count = peers_.size();
  if (int rc = fi_av_open(domain_, &avAttr, &av_, nullptr)) return failed("fi_av_open", rc);
  fi_cq_attr cqAttr{};
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.wait_obj = FI_WAIT_NONE;
  if (int rc = fi_cq_open(domain_, &cqAttr, &cq_, nullptr)) return failed("fi_cq_open", rc);
  if (int rc = fi_endpoint(domain_, mutableInfo, &ep_, nullptr)) return failed("fi_endpoint", rc);
  if (int rc = fi_ep_bind(ep_, &av_->fid, 0)) return failed("fi_ep_bind (address vector)", rc);
  if (int rc = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV)) return failed("fi_ep_bind (queue)", rc);
  if (int rc = fi_enable(ep_)) return failed("fi_enable", rc);
  address_.resize(64);
  size_t length = address_.size();
  int rc = fi_getname(&ep_->fid, address_.data(), &length);
  if (rc == -FI_ETOOSMALL) {
    address_.resize(length);
    rc = fi_getname(&ep_->fid, address_.data(), &length);
  }
  if (rc != 0) return failed("fi_getname", rc);
  address_.resize(length);
  return {};
}

// A receive of the 0-byte notice `peer` sends when it closes.
Status Endpoint::postAbortNoticeReceive(int peer) {
  auto made = std::make_unique<Op>();
  Op& op = *made;
  op.peer = peer;
  op.tag = tags::abortNotice(peer);
  ops_.emplace(&op, std::move(made));
  const auto rc = fi_trecv(ep_, nullptr, 0, nullptr, FI_ADDR_UNSPEC, op.tag, 0, &op.context);
  if (rc == 0) return {};
  // Best effort, as the notice itself: the timeout still catches that peer.
  ops_.erase(&op);
  log::info(log::Net, "rank {}: libfabric on '{}' keeps no receive for rank {}'s abort notice: {}", rank_, provider_,
            peer, api_.errorText(static_cast<int>(rc)));
  return {};
}

Status Endpoint::addPeer(int peer, const std::vector<uint8_t>& address) {
  std::lock_guard lock(mutex_);
  if (closed_) return internalError(fmt::format("rank {}: libfabric endpoint closed before setup", rank_));
  fi_addr_t addr = FI_ADDR_UNSPEC;
  const int n = fi_av_insert(av_, address.data(), 1, &addr, 0, nullptr);
  if (n != 1) {
    return systemError(fmt::format("rank {}: libfabric fi_av_insert of rank {}'s address ({} bytes) on '{}': {}",
                                   rank_, peer, address.size(), provider_,
                                   n < 0 ? api_.errorText(n) : std::string("not inserted")));
  }
  peers_[static_cast<size_t>(peer)].address = addr;
  return postAbortNoticeReceive(peer);
}

Status Endpoint::post(int peer, Transfer& transfer) {
  std::lock_guard lock(mutex_);
  PeerState& p = peers_[static_cast<size_t>(peer)];
  if (closed_ || !p.failure.ok()) {
    transfer.complete(Transfer::State::Failed);
    return p.failure.ok() ? remoteError(fmt::format("rank {}: link to rank {} ({}) was aborted", rank_, peer,
                                                    describe(peer)))
                          : p.failure;
  }
  transfer.progressed = 0;
  const size_t pieces = pieceCount(transfer.bytes, maxPieceBytes_);
  for (size_t i = 0; i < pieces; ++i) {
    auto made = std::make_unique<Op>();
    Op& op = *made;
    op.transfer = &transfer;
    op.peer = peer;
    op.offset = i * maxPieceBytes_;
    op.bytes = std::min(maxPieceBytes_, transfer.bytes - op.offset);
    op.last = i + 1 == pieces;
    op.tag = transfer.isSend ? tags::piece(rank_, p.sendSeq++) : tags::piece(peer, p.recvSeq++);
    ops_.emplace(&op, std::move(made));
    ++p.inFlight;
    // Behind refused pieces a piece waits its turn, so each peer's stay in order.
    const int rc = p.refused.empty() ? submit(op) : -FI_EAGAIN;
    if (rc == -FI_EAGAIN) {
      p.refused.push_back(&op);
      ++refusedOps_;
    } else if (rc != 0) {
      failPeer(peer, refusedPost(op, rc));
      return p.failure;
    }
  }
  return {};
}

int Endpoint::registerBuffer(Op& op, void* buffer) {
  const uint64_t access = op.transfer->isSend ? FI_SEND : FI_RECV;
  int rc = fi_mr_reg(domain_, buffer, op.bytes, access, 0, providerKeys_ ? 0 : nextKey_++, 0, &op.mr, nullptr);
  if (rc != 0) {
    op.mr = nullptr;
    return rc;
  }
  if (bindRegistrations_) {
    rc = fi_mr_bind(op.mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(op.mr);
    if (rc != 0) closeFid(op.mr);  // registered again when the post is retried
  }
  return rc;
}

int Endpoint::submit(Op& op) {
  const PeerState& p = peers_[static_cast<size_t>(op.peer)];
  void* buffer = static_cast<char*>(op.transfer->buffer) + op.offset;
  if (registerBuffers_ && op.bytes > 0 && !op.mr) {
    if (int rc = registerBuffer(op, buffer)) return rc;
  }
  void* desc = op.mr ? fi_mr_desc(op.mr) : nullptr;
  if (op.transfer->isSend) {
    return static_cast<int>(
        fi_tsenddata(ep_, buffer, op.bytes, desc, tags::pieceData(op.transfer->tag, op.last), p.address, op.tag,
                     &op.context));
  }
  return static_cast<int>(fi_trecv(ep_, buffer, op.bytes, desc, FI_ADDR_UNSPEC, op.tag, 0, &op.context));
}

Status Endpoint::progress(int peer, bool* madeProgress, bool* inFlight) {
  std::lock_guard lock(mutex_);
  const PeerState& p = peers_[static_cast<size_t>(peer)];
  if (inFlight) *inFlight = false;
  if (!p.failure.ok()) return p.failure;
  if (closed_) return remoteError(fmt::format("rank {}: link to rank {} ({}) was aborted", rank_, peer, describe(peer)));
  if (refusedOps_ > 0) submitRefused(madeProgress);
  if (!closed_) drainCompletions(madeProgress);
  if (inFlight) *inFlight = p.inFlight > 0;
  return p.failure;
}

void Endpoint::submitRefused(bool* madeProgress) {
  for (size_t peer = 0; peer < peers_.size() && refusedOps_ > 0 && !closed_; ++peer) {
    PeerState& p = peers_[peer];
    while (!p.refused.empty() && !closed_) {
      Op& op = *p.refused.front();
      const int rc = submit(op);
      if (rc == -FI_EAGAIN) break;
      p.refused.pop_front();
      --refusedOps_;
      if (rc != 0) {
        failPeer(static_cast<int>(peer), refusedPost(op, rc));
        return;
      }
      if (madeProgress) *madeProgress = true;
    }
  }
}

void Endpoint::drainCompletions(bool* madeProgress) {
  fi_cq_tagged_entry entries[kCompletionsPerRead];
  for (int round = 0; round < kReadsPerProgress && !closed_; ++round) {
    const ssize_t n = fi_cq_read(cq_, entries, kCompletionsPerRead);
    if (n == -FI_EAGAIN) return;
    if (n == -FI_EAVAIL) {
      readError();
      continue;
    }
    if (n < 0) {
      failAll(systemError(fmt::format("rank {}: libfabric fi_cq_read on '{}': {}", rank_, provider_,
                                      api_.errorText(static_cast<int>(n)))));
      return;
    }
    for (ssize_t i = 0; i < n && !closed_; ++i) {
      const auto found = ops_.find(static_cast<Op*>(entries[i].op_context));
      if (found == ops_.end()) continue;
      if (madeProgress) *madeProgress = true;
      const bool hasData = (entries[i].flags & FI_REMOTE_CQ_DATA) != 0;
      completed(*found->first, hasData ? static_cast<uint32_t>(entries[i].data) : 0, hasData, entries[i].len);
    }
    if (n < kCompletionsPerRead) return;
  }
}

void Endpoint::readError() {
  fi_cq_err_entry err{};
  const ssize_t r = fi_cq_readerr(cq_, &err, 0);
  if (r < 0) {
    if (r == -FI_EAGAIN) return;
    failAll(systemError(fmt::format("rank {}: libfabric fi_cq_readerr on '{}': {}", rank_, provider_,
                                    api_.errorText(static_cast<int>(r)))));
    return;
  }
  const auto found = ops_.find(static_cast<Op*>(err.op_context));
  const int code = err.err < 0 ? -err.err : err.err;  // positive by the spec; some providers negate it
  if (found == ops_.end() || !found->first->transfer) {
    failAll(systemError(fmt::format("rank {}: libfabric on '{}' reported {} for {}", rank_, provider_,
                                    api_.errorText(-code),
                                    found == ops_.end() ? "an unknown operation" : "the abort-notice receive")));
    return;
  }
  const Op& op = *found->first;
  const Transfer& t = *op.transfer;
  if (code == FI_ETRUNC && !t.isSend) {
    failPeer(op.peer, truncated(op, err));
    return;
  }
  char buffer[256] = "";
  // The provider may answer with its own string rather than fill the buffer.
  const char* detail = fi_cq_strerror(cq_, err.prov_errno, err.err_data, buffer, sizeof buffer);
  const std::string extra = detail && detail[0] ? std::string("; ") + detail : std::string();
  failPeer(op.peer, remoteError(fmt::format("rank {}: libfabric {} of {} bytes {} rank {} ({}) failed: {}{}", rank_,
                                            t.isSend ? "send" : "receive", op.bytes, t.isSend ? "to" : "from",
                                            op.peer, describe(op.peer), api_.errorText(-code), extra)));
}

Status Endpoint::refusedPost(const Op& op, int rc) const {
  const bool send = op.transfer->isSend;
  return systemError(fmt::format("rank {}: libfabric {} of {} bytes {} rank {} on '{}': {}", rank_,
                                 send ? "send" : "receive", op.bytes, send ? "to" : "from", op.peer, provider_,
                                 api_.errorText(rc)));
}

// HCL's tag as the sender sent it: the data flips its top bit on a last
// piece, which the receiver can tell only where the rest matches its own.
uint32_t Endpoint::senderTag(const Transfer& t, const Op& op, uint32_t sentData) {
  if (sentData == t.tag || sentData == (t.tag ^ tags::kLastPieceFlip)) return t.tag;
  return op.last ? tags::pieceData(sentData, true) : sentData;
}

// Providers differ in what they report of a message too long for its
// receive: some give its length and tag, some neither.
Status Endpoint::truncated(const Op& op, const fi_cq_err_entry& err) const {
  const Transfer& t = *op.transfer;
  if (err.olen > 0 && (err.flags & FI_REMOTE_CQ_DATA)) {
    return messageMismatch(rank_, op.peer, senderTag(t, op, static_cast<uint32_t>(err.data)),
                           op.offset + err.len + err.olen, t.tag, t.bytes);
  }
  return invalidUsage(fmt::format(
      "rank {}: message from rank {} is longer than the {} bytes expected with tag {:#010x} (the ranks' calls "
      "differ: collective, count, data type, root, operator or order; or send/recv sizes)",
      rank_, op.peer, op.bytes, t.tag));
}

void Endpoint::completed(Op& op, uint32_t sentData, bool hasData, size_t length) {
  const int peer = op.peer;
  if (!op.transfer) {
    failPeer(peer, remoteError(fmt::format("rank {}: rank {} ({}) aborted", rank_, peer, describe(peer))));
    return;
  }
  Transfer& t = *op.transfer;
  if (!t.isSend) {
    const uint32_t want = tags::pieceData(t.tag, op.last);
    const bool cutOtherwise = hasData && (sentData ^ tags::kLastPieceFlip) == want && length == op.bytes;
    if (!hasData || length != op.bytes || (sentData != want && !cutOtherwise)) {
      failPeer(peer, messageMismatch(rank_, peer, senderTag(t, op, sentData), op.offset + length, t.tag, t.bytes));
      return;
    }
    // Pieces of the expected length, but the sender's message ends sooner or later.
    if (cutOtherwise) {
      failPeer(peer, invalidUsage(fmt::format(
                         "rank {}: message from rank {} with tag {:#010x} is {} than the {} bytes expected (the "
                         "ranks' calls differ: collective, count, data type, root, operator or order; or "
                         "send/recv sizes)",
                         rank_, peer, t.tag, op.last ? "longer" : "shorter", t.bytes)));
      return;
    }
  }
  peers_[static_cast<size_t>(peer)].reached = true;
  releaseOp(op);
  if (++t.progressed == pieceCount(t.bytes, maxPieceBytes_)) t.complete(Transfer::State::Done);
}

void Endpoint::releaseOp(Op& op) {
  if (op.transfer) --peers_[static_cast<size_t>(op.peer)].inFlight;
  closeFid(op.mr);
  ops_.erase(&op);
}

// A failure breaks the whole endpoint: the communicator fails with its first
// error, and closing first means the provider no longer writes into any
// buffer once the transfers are marked failed. `peer` -1: none in particular.
void Endpoint::failPeer(int peer, Status status) {
  if (peer >= 0 && static_cast<size_t>(peer) < peers_.size()) peers_[static_cast<size_t>(peer)].broken = true;
  for (size_t q = 0; q < peers_.size(); ++q) {
    PeerState& p = peers_[q];
    if (!p.failure.ok()) continue;
    p.failure = static_cast<int>(q) == peer || peer < 0
                    ? status
                    : Status{status.code(), fmt::format("rank {}: link to rank {} closed after the link to rank {} "
                                                        "failed: {}",
                                                        rank_, q, peer, status.message())};
  }
  failQueued();
}

void Endpoint::failAll(Status status) { failPeer(-1, std::move(status)); }

void Endpoint::failQueued() {
  std::vector<Transfer*> transfers;
  transfers.reserve(ops_.size());
  for (const auto& [op, owned] : ops_) {
    if (op->transfer) transfers.push_back(op->transfer);
  }
  closeLocked(Notice::Peers);
  for (Transfer* t : transfers) t->complete(Transfer::State::Failed);
}

Status Endpoint::failPeerFromOutside(int peer, Status why) {
  std::lock_guard lock(mutex_);
  PeerState& p = peers_[static_cast<size_t>(peer)];
  if (p.failure.ok()) failPeer(peer, std::move(why));
  return p.failure;
}

void Endpoint::close() {
  std::lock_guard lock(mutex_);
  closeLocked(Notice::Peers);
}

// Best effort: a 0-byte notice to every peer whose connection is up, and a
// few milliseconds of the provider's progress to send them, offering again
// those it refused (a full queue); completions read meanwhile are dropped,
// as closing drops the operations anyway. Peers never reached, or whose
// link failed, get none: a send there makes the provider start a
// connection, and libfabric 1.17's rxm crashed closing an endpoint with one
// under way.
void Endpoint::noticePeers() {
  std::vector<size_t> pending;
  for (size_t q = 0; q < peers_.size(); ++q) {
    const PeerState& p = peers_[q];
    if (static_cast<int>(q) != rank_ && p.address != FI_ADDR_UNSPEC && p.reached && !p.broken) pending.push_back(q);
  }
  fi_cq_tagged_entry entries[kCompletionsPerRead];
  const auto end = std::chrono::steady_clock::now() + kNoticeFlush;
  while (std::chrono::steady_clock::now() < end) {
    std::erase_if(pending, [&](size_t q) {
      return fi_tinject(ep_, nullptr, 0, peers_[q].address, tags::abortNotice(rank_)) != -FI_EAGAIN;
    });
    const ssize_t n = fi_cq_read(cq_, entries, kCompletionsPerRead);
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      (void)fi_cq_readerr(cq_, &err, 0);
    } else if (n < 0 && n != -FI_EAGAIN) {
      break;
    }
  }
  if (!pending.empty()) {
    log::info(log::Net, "rank {}: libfabric on '{}' took no abort notice for {} of its peers", rank_, provider_,
              pending.size());
  }
}

void Endpoint::closeLocked(Notice notice) {
  if (closed_) return;
  closed_ = true;
  if (notice == Notice::Peers && ep_) noticePeers();
  if (ep_) closeLogged(&ep_->fid, "endpoint");
  ep_ = nullptr;
  for (auto& [op, owned] : ops_) closeFid(owned->mr);
  ops_.clear();
  for (PeerState& p : peers_) {
    p.refused.clear();
    p.inFlight = 0;
  }
  refusedOps_ = 0;
  if (cq_) closeLogged(&cq_->fid, "completion queue");
  if (av_) closeLogged(&av_->fid, "address vector");
  if (domain_) closeLogged(&domain_->fid, "domain");
  if (fabricFid_) closeLogged(&fabricFid_->fid, "fabric");
  cq_ = nullptr;
  av_ = nullptr;
  domain_ = nullptr;
  fabricFid_ = nullptr;
}

// libfabric 1.17's tcp;ofi_rxm keeps its domain and fabric busy after a
// peer died with a link to it open, whatever the wait: they stay open (and
// closing them again crashes), which is no news to the user whose job
// already failed.
void Endpoint::closeLogged(fid* object, const char* what) {
  const int rc = fi_close(object);
  if (rc == -FI_EBUSY) {
    log::info(log::Net, "rank {}: libfabric keeps its {} on '{}' busy (a link to a peer that is gone?); left open",
              rank_, what, provider_);
  } else if (rc != 0) {
    log::warn(log::Net, "rank {}: libfabric could not close its {} on '{}': {}", rank_, what, provider_,
              api_.errorText(rc));
  }
}

std::string Endpoint::describe(int /*peer*/) const {
  if (nicName_.empty()) return fmt::format("ofi {} (fabric {})", provider_, fabric_);
  return fmt::format("ofi {} (fabric {}) via {}", provider_, fabric_, nicName_);
}

}  // namespace hcl::ofi
