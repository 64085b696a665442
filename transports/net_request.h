// What HCL_NET (NCCL_NET) or a communicator's config->netName asks for:
// the one network that links between ranks may take (transports/net_choice.h).
#pragma once

#include <cstdint>
#include <string>

namespace hcl {

enum class NetChoice : uint8_t {
  Any,     // unset
  Socket,  // "Socket" or "tcp": HCL's TCP transport
  Ib,      // "IB" or "verbs": HCL's verbs transport
  Ofi,     // "OFI" or "libfabric": HCL's libfabric transport
  Plugin,  // any other name: the NCCL net plugin of that name
};

struct NetRequest {
  NetChoice choice = NetChoice::Any;
  std::string name;      // as given
  std::string variable;  // HCL_NET, NCCL_NET or config->netName, for messages
};

}  // namespace hcl
