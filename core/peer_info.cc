#include "core/peer_info.h"

#include "core/wire.h"

namespace hcl {
namespace {
constexpr uint32_t kPeerInfoMagic = 0x48434C50;  // "HCLP"
}

const char* toString(DeviceKind k) {
  switch (k) {
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Cuda: return "cuda";
    case DeviceKind::Hip: return "hip";
    case DeviceKind::Sim: return "sim";
  }
  return "unknown";
}

const char* toString(NicKind k) {
  switch (k) {
    case NicKind::Loopback: return "loopback";
    case NicKind::Ethernet: return "ethernet";
    case NicKind::IpoIb: return "ipoib";
    case NicKind::Roce: return "roce";
    case NicKind::Ib: return "ib";
  }
  return "unknown";
}

bool isRdma(NicKind k) { return k == NicKind::Ib || k == NicKind::Roce; }

std::vector<uint8_t> PeerInfo::serialize() const {
  WireWriter w;
  w.put(kPeerInfoMagic);
  w.put<int32_t>(rank);
  w.putString(hostId);
  w.putString(networkStack);
  w.put(pid);
  w.put(processToken);
  w.put(static_cast<uint8_t>(deviceKind));
  w.putString(vendor);
  w.put<int32_t>(deviceIndex);
  w.put<uint8_t>(static_cast<uint8_t>((shmEnabled ? 1 : 0) | (ipcCapable ? 2 : 0)));
  w.put(chunkBytes);
  w.put(stageChunkBytes);
  w.put(probeLinks);
  w.put(peerWatch);
  w.put<uint32_t>(static_cast<uint32_t>(addresses.size()));
  for (const auto& a : addresses) {
    w.putString(a.ifname);
    w.putString(a.ip);
    w.put(a.port);
    w.put(a.prefixLen);
    w.put(static_cast<uint8_t>(a.kind));
    w.put(a.speedMbps);
    w.putString(a.fabric);
  }
  w.put<uint32_t>(static_cast<uint32_t>(ofiEndpoints.size()));
  for (const OfiEndpointInfo& e : ofiEndpoints) {
    w.putString(e.provider);
    w.putString(e.fabric);
    w.put<int32_t>(e.nic);
    w.putBytes(e.address);
  }
  w.putString(netPlugin);
  w.put(netPluginSpeedMbps);
  w.putString(netName);
  w.putString(netNameFrom);
  w.put<uint32_t>(static_cast<uint32_t>(ibFabrics.size()));
  for (const std::string& f : ibFabrics) w.putString(f);
  w.put(ibSpeedMbps);
  w.putString(rescueIp);
  w.put(rescuePort);
  w.put<uint32_t>(static_cast<uint32_t>(cpuMask.size()));
  for (uint64_t word : cpuMask) w.put(word);
  return w.take();
}

bool PeerInfo::deserialize(const uint8_t* data, size_t size, PeerInfo& out) {
  WireReader r(data, size);
  uint32_t magic = 0;
  int32_t rank = 0, devIndex = 0;
  uint8_t kind = 0, shm = 0;
  uint32_t naddr = 0;
  if (!r.get(magic) || magic != kPeerInfoMagic) return false;
  r.get(rank);
  r.getString(out.hostId);
  r.getString(out.networkStack);
  r.get(out.pid);
  r.get(out.processToken);
  r.get(kind);
  r.getString(out.vendor);
  r.get(devIndex);
  r.get(shm);
  r.get(out.chunkBytes);
  r.get(out.stageChunkBytes);
  r.get(out.probeLinks);
  r.get(out.peerWatch);
  r.get(naddr);
  if (!r.ok() || kind > static_cast<uint8_t>(DeviceKind::Sim) || naddr > 1024) return false;
  out.rank = rank;
  out.deviceKind = static_cast<DeviceKind>(kind);
  out.deviceIndex = devIndex;
  out.shmEnabled = (shm & 1) != 0;
  out.ipcCapable = (shm & 2) != 0;
  out.addresses.resize(naddr);
  for (auto& a : out.addresses) {
    r.getString(a.ifname);
    r.getString(a.ip);
    r.get(a.port);
    r.get(a.prefixLen);
    uint8_t nicKind = 0;
    r.get(nicKind);
    if (nicKind > static_cast<uint8_t>(NicKind::Ib)) return false;
    a.kind = static_cast<NicKind>(nicKind);
    r.get(a.speedMbps);
    r.getString(a.fabric);
  }
  uint32_t endpoints = 0;
  r.get(endpoints);
  if (!r.ok() || endpoints > 64) return false;
  out.ofiEndpoints.resize(endpoints);
  for (OfiEndpointInfo& e : out.ofiEndpoints) {
    int32_t nic = -1;
    r.getString(e.provider);
    r.getString(e.fabric);
    r.get(nic);
    r.getBytes(e.address);
    if (!r.ok() || nic < -1 || nic >= static_cast<int32_t>(out.addresses.size()) || e.address.empty()) return false;
    e.nic = nic;
  }
  r.getString(out.netPlugin);
  r.get(out.netPluginSpeedMbps);
  r.getString(out.netName);
  r.getString(out.netNameFrom);
  uint32_t fabrics = 0;
  r.get(fabrics);
  if (!r.ok() || fabrics > 64) return false;
  out.ibFabrics.resize(fabrics);
  for (std::string& f : out.ibFabrics) r.getString(f);
  r.get(out.ibSpeedMbps);
  r.getString(out.rescueIp);
  r.get(out.rescuePort);
  uint32_t maskWords = 0;
  r.get(maskWords);
  if (!r.ok() || maskWords > 1024) return false;
  out.cpuMask.resize(maskWords);
  for (uint64_t& word : out.cpuMask) r.get(word);
  return r.ok() && r.atEnd();
}

}  // namespace hcl
