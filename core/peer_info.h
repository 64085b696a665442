// What every rank publishes about itself at bootstrap. Link selection is a
// pure function of two of these, so both ends of a link reach the same answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hcl {

// Sim is a stand-in GPU for tests (device/sim).
enum class DeviceKind : uint8_t { Cpu = 0, Cuda = 1, Hip = 2, Sim = 3 };
const char* toString(DeviceKind k);

// Ordered from least to most preferred when two fabrics are otherwise equal.
enum class NicKind : uint8_t { Loopback = 0, Ethernet = 1, IpoIb = 2, Roce = 3, Ib = 4 };
const char* toString(NicKind k);
bool isRdma(NicKind k);

struct NetAddress {
  std::string ifname;  // e.g. "eth0", "lo"
  std::string ip;      // numeric, v4 or v6
  uint16_t port = 0;   // this rank's TCP listener on that interface
  uint8_t prefixLen = 0;  // subnet prefix length of the interface
  NicKind kind = NicKind::Ethernet;
  uint32_t speedMbps = 0;  // 0: unknown
  std::string fabric;      // ranks share a network only where labels match
};

// A libfabric endpoint a rank opened (HCL_OFI).
struct OfiEndpointInfo {
  std::string provider;  // "tcp;ofi_rxm", "efa", ...
  std::string fabric;    // the provider's fabric name
  // Index into the rank's addresses of the NIC the endpoint sends from (its
  // source address is that NIC's); -1: not tied to one (EFA, shm, ...).
  int nic = -1;
  std::vector<uint8_t> address;
};

struct PeerInfo {
  int rank = -1;
  std::string hostId;      // HCL_HOSTID, or hostname + boot id
  // The kernel and network namespace it runs in (core/host_identity.h);
  // ranks of emulated hosts (HCL_HOSTID) on one machine share it.
  std::string networkStack;
  int64_t pid = 0;
  uint64_t processToken = 0;  // random per process: tells processes apart across pid namespaces
  DeviceKind deviceKind = DeviceKind::Cpu;
  std::string vendor = "cpu";
  int deviceIndex = -1;
  bool shmEnabled = true;  // false under HCL_SHM_DISABLE=1
  bool ipcCapable = false;  // its device can share memory with same-vendor peers on the host (IPC)
  std::vector<NetAddress> addresses;
  // Its libfabric endpoints, where it opened any (HCL_OFI).
  std::vector<OfiEndpointInfo> ofiEndpoints;
  // The name of the NCCL net plugin it loaded (HCL_NET_PLUGIN); empty: none.
  std::string netPlugin;
  uint32_t netPluginSpeedMbps = 0;  // its slowest device taking host memory; 0: unknown
  // The fabrics of the verbs ports it opened (HCL_IB): "ib:<subnet prefix>"
  // or "roce", sorted; empty: none.
  std::vector<std::string> ibFabrics;
  // The one network its HCL_NET, NCCL_NET or config.netName names (empty:
  // none), and which of them named it: every end of a link checks both.
  std::string netName;
  std::string netNameFrom;
  uint32_t ibSpeedMbps = 0;  // its slowest such port; 0: unknown
  // A port this rank holds for a bootstrap root of its own, used when the
  // communicator fails and the survivors shrink it without its links (0: none).
  std::string rescueIp;
  uint16_t rescuePort = 0;
  // The CPUs this rank may run on, 64 per word (core/host_cpus.h; empty: unknown).
  std::vector<uint64_t> cpuMask;
  // Settings every rank of a communicator must share (checked at init).
  uint64_t chunkBytes = 0;       // HCL_CHUNK_BYTES in effect
  uint64_t stageChunkBytes = 0;  // HCL_STAGE_CHUNK_BYTES in effect
  uint64_t probeLinks = 0;       // HCL_PROBE in effect (it adds init rounds every rank must run)
  uint64_t peerWatch = 1;        // HCL_PEER_WATCH in effect (both ends of a pair set a watch up)

  std::vector<uint8_t> serialize() const;
  static bool deserialize(const uint8_t* data, size_t size, PeerInfo& out);
};

}  // namespace hcl
