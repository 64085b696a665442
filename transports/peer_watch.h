// Tells when a peer's process ends, for links whose network does not say:
// libfabric's tcp;ofi_rxm reports nothing on a receive whose sender was
// killed, and a net plugin need not either, so without this a survivor
// would learn of the death only at HCL_TIMEOUT_MS. Each pair of ranks on
// such links keeps one idle TCP connection. The kernel closes it when
// either process ends, however it ends; keepalive notices a host that died
// or a dropped route within about 20 s. A rank that closes its end on
// purpose first says how: a goodbye (destroy), after which a call still
// waiting on it is left to the transport and the timeout, as before; or an
// abort (hclCommAbort, or a failure elsewhere), which fails such a call at
// once, as shared memory's abort flag and TCP's reset do. An end without a
// word is the peer's death.
//
// Setup follows the transport's phases: prepare() opens a listener where a
// lower-ranked peer will connect, preparedFor() carries its port, connect()
// makes every watch connection (the lower rank of a pair connects).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/function_ref.h"
#include "core/status.h"
#include "transports/abort_reason.h"
#include "transports/transport.h"

namespace hcl {

class PeerWatch {
 public:
  // `label` names the links in texts ("libfabric", "net plugin 'x'").
  PeerWatch(int rank, int nranks, std::string label);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // The higher rank of each pair listens on the address of its NIC
  // listenerNic(peer) (an index into that rank's addresses; -1: its first
  // address), which both ends compute alike from published facts. A pair
  // with no address is watched by neither end.
  Status prepare(const TransportContext& ctx, const std::vector<int>& peers, FunctionRef<int(int)> listenerNic);
  // This rank's listener port, for a watched lower-ranked peer; empty otherwise.
  std::vector<uint8_t> preparedFor(int peer) const;
  // preparedBy(peer): what a peer above this rank sent with its
  // preparedFor(). Blocks until every watch connection is up, within
  // ctx's timeout and abort flag.
  Status connect(const TransportContext& ctx, FunctionRef<std::vector<uint8_t>(int)> preparedBy);

  // Call only while transfers with `peer` are in flight; `linkMoved`: the
  // link moved bytes since the last call. Ok while the peer lives; an error
  // naming it once it aborted, or once its end closed without a word and
  // the link then stayed still for a short grace (data its kernel still
  // held may be on its way). Looks at the socket at most every 5 ms.
  Status check(int peer, bool linkMoved);
  // Tells every peer goodbye (close) or that this rank aborted (abort,
  // with why, if for a failure: shortenedAbortReason of it), and stops
  // watching. The first of them counts.
  static constexpr size_t kMostReasonBytes = kMostAbortReasonBytes;
  void close();
  void abort(const std::string& why = {});

  // Tests: whether `peer` is watched.
  bool watching(int peer) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Watched {
    int fd = -1;
    Clock::time_point nextLook{};
    std::optional<Clock::time_point> endedAt;  // closed without a word; since then the link stayed still
    bool aborted = false;                      // it said it aborted
    std::string abortReason;                   // and why, where it said
    std::string who;                           // "rank 2 (pid 4711 on host h1)"
    std::string listenerIp;                    // empty: not watched
  };

  void closeLocked(uint8_t word, const std::string& why);

  int rank_;
  std::string label_;
  mutable std::mutex mutex_;
  int listenFd_ = -1;
  uint16_t listenPort_ = 0;
  std::vector<int> peers_;        // those prepare() was given
  std::vector<Watched> watched_;  // by rank
  bool closed_ = false;
};

}  // namespace hcl
