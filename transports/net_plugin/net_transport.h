// A transport over the NCCL net plugin face (net_plugin.h): the external
// plugins, and HCL's own networks written to the same face (verbs). What
// sets them apart is a NetSource; setup and connections are shared.
// Connections are one-way in this API, so each link is a send comm and a
// receive comm, set up from listen handles that the ranks swap between
// prepare() and connect().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transports/net_plugin/net_plugin.h"
#include "transports/transport.h"

namespace hcl {

struct Link;

struct NetDevice {
  int index = 0;
  netplugin::DeviceProperties properties;
};

class NetSource {
 public:
  virtual ~NetSource() = default;
  virtual TransportKind kind() const = 0;
  // The network this rank uses, or null (with ok) where it has none; an
  // error fails init. Called once, from listen().
  virtual Status open(const TransportContext& ctx, netplugin::NetPlugin** out) = 0;
  // The network opened but cannot carry links (no device takes host
  // memory, a query failed): an error, or ok after saying why.
  virtual Status unusable(const TransportContext& ctx, const std::string& why) const = 0;
  // What link selection reads of this rank, from the devices that take
  // host memory.
  virtual void publish(const std::vector<NetDevice>& devices, PeerInfo& self) = 0;
  // Whether a device carries the link to a peer (say, it is on the fabric
  // the link chose); both ends must answer alike for their own devices.
  virtual bool carries(const NetDevice& /*device*/, const Link& /*link*/) const { return true; }
  // Before the first connect() to `peer` with its handle.
  virtual Status prepareHandle(const TransportContext& /*ctx*/, int /*peer*/, void* /*handle*/) const { return {}; }
  // Whether the network itself tells when a peer's process ends (verbs: its
  // side connection); otherwise each link gets a PeerWatch.
  virtual bool watchesPeers() const { return false; }
  // "net plugin 'aws-ofi'", "verbs": how messages name the network.
  virtual std::string label() const = 0;
};

std::unique_ptr<Transport> makeNetTransport(std::unique_ptr<NetSource> source);

}  // namespace hcl
