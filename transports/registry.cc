// The one place that maps a transport kind to its implementation.
// Adding a transport: a new folder plus one line here.
#include "transports/ib/ib_transport.h"
#include "transports/local/local_transport.h"
#include "transports/net_plugin/net_plugin_transport.h"
#include "transports/ofi/ofi_transport.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"

namespace hcl {

std::span<const TransportKind> allTransportKinds() {
  // Verbs and the net plugin after the TCP and libfabric transports, whose
  // listen() fills the PeerInfo fields link selection weighs them against
  // (and the addresses verbs' side connections use).
  static constexpr TransportKind kAll[] = {TransportKind::Local, TransportKind::Shm, TransportKind::Tcp,
                                           TransportKind::Ofi, TransportKind::NetPlugin, TransportKind::Ib};
  return kAll;
}

const char* toString(TransportKind k) {
  switch (k) {
    case TransportKind::Local: return "local";
    case TransportKind::Shm: return "shm";
    case TransportKind::Tcp: return "tcp";
    case TransportKind::Ofi: return "ofi";
    case TransportKind::NetPlugin: return "net-plugin";
    case TransportKind::Ib: return "ib";
  }
  return "unknown";
}

std::unique_ptr<Transport> makeTransport(TransportKind kind) {
  switch (kind) {
    case TransportKind::Local: return makeLocalTransport();
    case TransportKind::Shm: return makeShmTransport();
    case TransportKind::Tcp: return makeTcpTransport();
    case TransportKind::Ofi: return makeOfiTransport();
    case TransportKind::NetPlugin: return makeNetPluginTransport();
    case TransportKind::Ib: return makeIbTransport();
  }
  return nullptr;
}

}  // namespace hcl
