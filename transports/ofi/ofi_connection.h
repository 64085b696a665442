// A Connection to one peer over the communicator's shared libfabric endpoint,
// with the watch (null: HCL_PEER_WATCH=0) that tells when the peer's process ends (the provider may
// not: tcp;ofi_rxm leaves a receive from a killed peer pending).
#pragma once

#include <memory>
#include <string>

#include "transports/ofi/ofi_endpoint.h"
#include "transports/peer_watch.h"
#include "transports/transport.h"

namespace hcl::ofi {

class OfiConnection final : public Connection {
 public:
  OfiConnection(std::shared_ptr<Endpoint> endpoint, std::shared_ptr<PeerWatch> watch, int peer)
      : endpoint_(std::move(endpoint)), watch_(std::move(watch)), peer_(peer) {}

  Status post(Transfer& transfer) override { return endpoint_->post(peer_, transfer); }
  Status progress(bool* madeProgress) override {
    bool moved = false, inFlight = false;
    HCL_TRY(endpoint_->progress(peer_, &moved, &inFlight));
    if (moved && madeProgress) *madeProgress = true;
    if (!watch_ || !inFlight) return {};
    if (Status ended = watch_->check(peer_, moved); !ended.ok()) return endpoint_->failPeerFromOutside(peer_, ended);
    return {};
  }
  // The communicator aborts all its links at once, so this closes the
  // shared endpoint and the watch; the peers notice their connections to
  // it closing.
  void abort() override { abortBecause({}); }
  void abortBecause(const Status& why) override {
    endpoint_->close();
    if (watch_) watch_->abort(why.message());
  }
  std::string describe() const override { return endpoint_->describe(peer_); }

 private:
  std::shared_ptr<Endpoint> endpoint_;
  std::shared_ptr<PeerWatch> watch_;
  int peer_;
};

}  // namespace hcl::ofi
