// A Connection to one peer over the communicator's shared libfabric endpoint.
#pragma once

#include <memory>
#include <string>

#include "transports/ofi/ofi_endpoint.h"
#include "transports/transport.h"

namespace hcl::ofi {

class OfiConnection final : public Connection {
 public:
  OfiConnection(std::shared_ptr<Endpoint> endpoint, int peer) : endpoint_(std::move(endpoint)), peer_(peer) {}

  Status post(Transfer& transfer) override { return endpoint_->post(peer_, transfer); }
  Status progress(bool* madeProgress) override { return endpoint_->progress(peer_, madeProgress); }
  // The communicator aborts all its links at once, so this closes the
  // shared endpoint; the peers notice their connections to it closing.
  void abort() override { endpoint_->close(); }
  std::string describe() const override { return endpoint_->describe(peer_); }

 private:
  std::shared_ptr<Endpoint> endpoint_;
  int peer_;
};

}  // namespace hcl::ofi
