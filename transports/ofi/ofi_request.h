// When HCL uses libfabric, and which provider: HCL_OFI (auto, on, off) and
// HCL_OFI_PROVIDER. Opening libfabric costs a process about a third of a
// second (its providers probe the host), so "auto" opens it only on a host
// that shows RDMA hardware, and there takes only hardware providers; the
// software ones (tcp, udp, sockets, shm, net) are no faster than HCL's own
// TCP and shared memory, and are used only when asked for.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "transports/net_request.h"

namespace hcl::ofi {

enum class OfiMode { Off, Auto, On };

struct OfiRequest {
  OfiMode mode = OfiMode::Auto;
  std::string provider;  // exact libfabric provider name ("tcp;ofi_rxm", "efa"); empty: any
  std::string askedBy = "HCL_OFI";  // what turned it on, for messages
  // Turned on by HCL_NET naming OFI, which a net plugin of that name may
  // serve instead: missing libfabric then fails only at the link check.
  bool byNetRequest = false;
};

// From HCL_OFI and HCL_OFI_PROVIDER; naming a provider asks for libfabric
// unless HCL_OFI is off. A bad HCL_OFI value is an error naming it.
// HCL_NET (NCCL_NET) naming OFI turns auto into on, and naming another
// network turns libfabric off.
Status readOfiRequest(OfiRequest& out, const NetRequest& net);
Status parseOfiRequest(std::string_view mode, std::string_view provider, OfiRequest& out);

// The core of a layered name: "tcp" for "tcp;ofi_rxm".
std::string_view coreProvider(std::string_view name);
bool isSoftwareProvider(std::string_view name);
// Whether a provider of this name may serve the request (the sockets
// provider only by name: it is pathologically slow).
bool providerWanted(std::string_view name, const OfiRequest& request);

// An RDMA device in sysfs (InfiniBand class devices, which include RoCE and
// EFA, or Slingshot's cxi); `root` is "/sys" outside tests.
bool hostShowsRdmaHardware(const std::string& root = "/sys");

}  // namespace hcl::ofi
