// HCL's own verbs network (InfiniBand and RoCE), behind the same face as
// an NCCL net plugin (transports/net_plugin/net_plugin.h), so the plugin
// transport's connections and setup carry it. Each one-way comm is a
// reliable-connected queue pair with its own completion queue; a message
// is one SEND with immediate data (the tag) into a posted receive.
// Queue pairs meet over a TCP side connection, which stays open so that
// a peer that dies is noticed (verbs alone would only time out a send).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/peer_info.h"
#include "transports/ib/ib_device_filter.h"
#include "transports/net_plugin/net_plugin.h"

namespace hcl::ib {

struct VerbsApi;

struct IbSettings {
  std::string library = "libibverbs.so.1";  // HCL_IBVERBS_LIBRARY
  std::string hcaText;                      // HCL_IB_HCA, as given
  int gidIndex = -1;                        // HCL_IB_GID_INDEX; -1: RoCE v2 over IPv4 where known, else 0
  int timeout = 20;                         // HCL_IB_TIMEOUT: 4.096 us * 2^timeout per try
  int retryCount = 7;                       // HCL_IB_RETRY_CNT
  int serviceLevel = 0;                     // HCL_IB_SL
  int trafficClass = 0;                     // HCL_IB_TC
};

IbSettings readIbSettings();

// One active port a rank may use, as link selection and setup see it.
struct IbPortSummary {
  std::string name;    // "mlx5_0:1"
  std::string fabric;  // "ib:fe80:0000:0000:0000" (the subnet) or "roce"
  bool ethernet = false;
  std::string ipv4;    // RoCE: the address in the port's GID
  uint32_t speedMbps = 0;
  int gidIndex = 0;
};

// The fabric label a rank publishes for a port. RoCE ports reach each
// other only where IP does, so theirs is the fabric of the interface that
// holds the GID's address (one of the rank's published addresses), else
// that address alone; InfiniBand ports keep their subnet's label.
std::string publishedFabric(const IbPortSummary& port, const std::vector<NetAddress>& addresses);

class IbNet : public netplugin::NetPlugin {
 public:
  // Ports the filter admits and whose state is active; null, with *why,
  // when the library or no port can be used. The devices stay open for
  // the process's lifetime (as an NCCL plugin's do).
  static std::unique_ptr<IbNet> open(const IbSettings& settings, std::string* why);
  virtual const std::vector<IbPortSummary>& ports() const = 0;
};

// A listen handle names no address (the listener takes every one); the
// connecting rank writes the peer's address into it before connect().
bool setHandleAddress(void* handle, const std::string& ip);
// The TCP port of the side listener a handle names (0: not a handle).
uint16_t handleSidePort(const void* handle);

}  // namespace hcl::ib
