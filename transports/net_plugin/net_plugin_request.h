// What HCL_NET_PLUGIN (NCCL_NET_PLUGIN) asks for.
#pragma once

#include <string>
#include <string_view>

#include "core/params.h"
#include "transports/net_request.h"

namespace hcl::netplugin {

struct NetPluginRequest {
  bool off = false;   // "none"
  std::string spec;   // library name or path; empty: NCCL's default, libnccl-net.so
  // A plugin named under HCL's own name that cannot be used fails init;
  // the default, or one named under NCCL's name, leaves HCL's own
  // transports in place, as NCCL leaves its internal ones.
  bool required = false;
};

NetPluginRequest parseNetPluginRequest(const ParamValue& value);
// HCL_NET_PLUGIN, turned off where `net` names another network.
NetPluginRequest readNetPluginRequest(const NetRequest& net);

}  // namespace hcl::netplugin
