// NCCL net plugin transport: links that would leave over TCP or libfabric go
// through an external NCCL network plugin (HCL_NET_PLUGIN, net_plugin.h)
// where both ranks loaded the same one, as NCCL prefers a plugin to its
// internal networks. Connections are one-way in the plugin API, so each
// link is a send comm and a receive comm, set up from listen handles that
// the ranks swap between prepare() and connect().
#pragma once

#include <memory>
#include <string>

#include "transports/transport.h"

namespace hcl {

std::unique_ptr<Transport> makeNetPluginTransport();
// For hcl-info: the plugin HCL_NET_PLUGIN names (or the default), and
// whether it loads here.
std::string describeNetPluginSupport();

}  // namespace hcl
