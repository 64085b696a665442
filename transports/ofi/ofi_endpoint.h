// One libfabric RDM endpoint per communicator, shared by its connections to
// every peer on libfabric. Messages above the provider's largest go in
// pieces; each piece's libfabric tag holds its sender and its place
// (ofi_tags.h). HCL's own tag travels as remote completion data and is
// checked on arrival with the size and the last-piece mark (a mismatch is an
// error naming both, not a hang). Closing the endpoint first sends every
// peer a notice, so theirs fail at once instead of at their timeout.
//
// All calls lock one mutex: the endpoint's completion queue holds every
// peer's completions, and whichever connection polls it completes them.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/function_ref.h"
#include "core/peer_info.h"
#include "core/status.h"
#include "transports/ofi/fabric_api.h"
#include "transports/ofi/ofi_request.h"
#include "transports/transport.h"

namespace hcl::ofi {

class Endpoint;

struct OpenedEndpoint {
  std::unique_ptr<Endpoint> endpoint;
  int nic = -1;  // index of the NIC it sends from; -1: none of them
};

class Endpoint {
 public:
  static constexpr size_t kMostEndpoints = 8;
  // Opens the first provider the request accepts whose tags and completion
  // data carry what HCL needs. *found is false (and the status ok) when
  // libfabric offers none; a provider that fails to open is an error.
  static Status open(const FabricApi& api, const OfiRequest& request, int rank, int nranks,
                     std::unique_ptr<Endpoint>& out, bool* found);
  // One endpoint per NIC of `nics` that a provider the request accepts sends
  // from (its source address is the NIC's), and one per fabric of providers
  // tied to no such address (EFA, shm, ...), at most kMostEndpoints. A
  // failure to open one is logged and skipped; the status is the first
  // failure when none opened.
  static Status openPerNic(const FabricApi& api, const OfiRequest& request, int rank, int nranks,
                           const std::vector<NetAddress>& nics, std::vector<OpenedEndpoint>& out);
  Endpoint(const FabricApi& api, int rank, int nranks);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const std::string& provider() const { return provider_; }
  const std::string& fabric() const { return fabric_; }
  const std::vector<uint8_t>& address() const { return address_; }

  // Makes `peer` reachable at the address it published, and listens for its abort notice.
  Status addPeer(int peer, const std::vector<uint8_t>& address);

  Status post(int peer, Transfer& transfer);
  // Hands the provider what it refused before, reads completions for every
  // peer, and returns `peer`'s failure, if any. *inFlight (where given):
  // whether a transfer with `peer` is still posted and not done.
  Status progress(int peer, bool* madeProgress, bool* inFlight = nullptr);
  // A failure `peer`'s link learnt of elsewhere (its process ended): fails
  // every queued transfer, as one the provider reports, and returns `why`
  // (or the failure that came first).
  Status failPeerFromOutside(int peer, Status why);
  // Tells the peers (best effort) and closes the endpoint: nothing is
  // delivered into, nor read from, any queued transfer afterwards, and none
  // is marked.
  void close();
  std::string describe(int peer) const;
  // Cuts messages into pieces of at most this many bytes (tests; both ends alike).
  void limitPieceBytes(size_t bytes) { maxPieceBytes_ = std::max<size_t>(1, std::min(bytes, maxPieceBytes_)); }

 private:
  struct Op;
  struct PeerState {
    fi_addr_t address = FI_ADDR_UNSPEC;
    uint32_t sendSeq = 0;
    uint32_t recvSeq = 0;
    std::deque<Op*> refused;  // not yet taken by the provider (FI_EAGAIN), oldest first
    size_t inFlight = 0;      // pieces of transfers posted and not yet done
    Status failure;
    // A transfer with the peer completed, and none failed: its connection
    // is up, so a notice can go without making one.
    bool reached = false;
    bool broken = false;
  };
  enum class Notice { None, Peers };

  using CandidateVisitor = FunctionRef<bool(const fi_info&)>;  // false: stop
  static Status listCandidates(const FabricApi& api, const OfiRequest& request, int rank, int nranks,
                               CandidateVisitor visit);
  static int nicOf(const fi_info& info, const std::vector<NetAddress>& nics);
  Status openFrom(const fi_info& info);
  int submit(Op& op);  // 0, -FI_EAGAIN (the provider is full), or a libfabric error
  int registerBuffer(Op& op, void* buffer);
  void submitRefused(bool* madeProgress);
  Status postAbortNoticeReceive(int peer);
  void drainCompletions(bool* madeProgress);
  void readError();
  Status truncated(const Op& op, const fi_cq_err_entry& err) const;
  Status refusedPost(const Op& op, int rc) const;  // a post the provider failed (not FI_EAGAIN)
  static uint32_t senderTag(const Transfer& t, const Op& op, uint32_t sentData);
  void completed(Op& op, uint32_t sentData, bool hasData, size_t length);
  void failPeer(int peer, Status status);
  void failAll(Status status);
  void failQueued();
  void releaseOp(Op& op);
  void noticePeers();
  void closeLocked(Notice notice);
  void closeLogged(fid* object, const char* what);

  const FabricApi& api_;
  int rank_;
  std::string provider_;
  std::string fabric_;
  std::string nicName_;  // the NIC it sends from, where tied to one
  std::vector<uint8_t> address_;
  size_t maxPieceBytes_ = 0;
  bool registerBuffers_ = false;  // the provider needs local registration (FI_MR_LOCAL)
  bool bindRegistrations_ = false;  // ... bound to the endpoint (FI_MR_ENDPOINT)
  bool providerKeys_ = false;  // the provider picks registration keys (FI_MR_PROV_KEY)
  uint64_t nextKey_ = 1;

  mutable std::mutex mutex_;
  bool closed_ = false;
  fid_fabric* fabricFid_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_ep* ep_ = nullptr;
  std::vector<PeerState> peers_;
  size_t refusedOps_ = 0;  // over every peer's refused queue
  std::unordered_map<Op*, std::unique_ptr<Op>> ops_;
};

}  // namespace hcl::ofi
