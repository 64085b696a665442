// The one place that maps a transport kind to its implementation.
// Adding a transport: a new folder plus one line here.
#include "transports/local/local_transport.h"
#include "transports/ofi/ofi_transport.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"

namespace hcl {

const char* toString(TransportKind k) {
  switch (k) {
    case TransportKind::Local: return "local";
    case TransportKind::Shm: return "shm";
    case TransportKind::Tcp: return "tcp";
    case TransportKind::Ofi: return "ofi";
  }
  return "unknown";
}

std::unique_ptr<Transport> makeTransport(TransportKind kind) {
  switch (kind) {
    case TransportKind::Local: return makeLocalTransport();
    case TransportKind::Shm: return makeShmTransport();
    case TransportKind::Tcp: return makeTcpTransport();
    case TransportKind::Ofi: return makeOfiTransport();
  }
  return nullptr;
}

}  // namespace hcl
