// Tells when a peer's process ends, for links whose network does not say:
// libfabric's tcp;ofi_rxm reports nothing on a receive whose sender was
// killed, and a net plugin need not either, so without this a survivor
// would learn of the death only at HCL_TIMEOUT_MS. Each pair of ranks on
// such links keeps one idle TCP connection. The kernel closes it when
// either process ends, however it ends; keepalive notices a host that died
// or a dropped route within about 20 s. A rank that closes its end on
// purpose (destroy, abort) first writes a goodbye, so only an end without
// one counts as the peer's death: an abort is left to the transport's own
// notice, and a destroyed peer to the timeout, as before.
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

#include "core/status.h"
#include "transports/transport.h"

namespace hcl {

// Where a higher-ranked peer's watch listener is.
struct WatchListener {
  std::string ip;  // numeric
  uint16_t port = 0;
};

class PeerWatch {
 public:
  // `label` names the links in texts ("libfabric", "net plugin 'x'").
  PeerWatch(int rank, int nranks, std::string label);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  Status prepare(const TransportContext& ctx, const std::vector<int>& peers);
  // This rank's listener port, for a lower-ranked peer; empty otherwise.
  std::vector<uint8_t> preparedFor(int peer) const;
  // Where `peer` listens: the address of its NIC `nic` (an index into its
  // addresses) where that is one, else its first address; empty: none.
  static std::string addressOf(const PeerInfo& peer, int nic);
  // The port a higher-ranked peer's preparedFor() carried; nullopt when malformed.
  static std::optional<uint16_t> readPort(const std::vector<uint8_t>& blob);
  // listeners[peer]: where each peer above this rank listens (others are
  // not read). Blocks until every watch connection is up, within ctx's
  // timeout and abort flag.
  Status connect(const TransportContext& ctx, const std::vector<int>& peers,
                 const std::vector<WatchListener>& listeners);

  // Call only while transfers with `peer` are in flight: ok while its
  // process lives; once its end closed without a goodbye (and a short grace
  // for data still on its way has passed), an error naming it. Looks at the
  // socket at most every few milliseconds.
  Status check(int peer);
  // Says goodbye to every peer and stops watching. Idempotent.
  void close();

  // Tests: whether `peer` is watched.
  bool watching(int peer) const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Watched {
    int fd = -1;
    Clock::time_point nextLook{};
    std::optional<Clock::time_point> endedAt;  // closed without a goodbye
    std::string who;                           // "rank 2 (pid 4711 on host h1)"
  };

  void closeLocked();

  int rank_;
  std::string label_;
  mutable std::mutex mutex_;
  int listenFd_ = -1;
  uint16_t listenPort_ = 0;
  std::vector<Watched> watched_;  // by rank
  bool closed_ = false;
};

}  // namespace hcl
