#include "transports/ib/ib_ports.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

namespace hcl::ib {
namespace {

struct OpenedDevice {
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_device_attr attr{};
  std::string failure;
};

// Devices by library and name, opened at most once per process.
OpenedDevice& openedDevice(const VerbsApi& verbs, ibv_device* device, const std::string& name) {
  static std::mutex mutex;
  static auto& opened = *std::make_unique<std::map<std::string, OpenedDevice>>().release();
  std::lock_guard lock(mutex);
  // Keyed by process too: a child forked after its parent opened a device
  // may not use the parent's context.
  auto [it, fresh] = opened.try_emplace(fmt::format("{}\n{}\n{}", getpid(), verbs.library, name));
  OpenedDevice& d = it->second;
  if (!fresh) return d;
  d.context = verbs.openDevice(device);
  if (!d.context) {
    d.failure = fmt::format("{}: ibv_open_device failed: {}", name, std::strerror(errno));
    return d;
  }
  if (const int rc = verbs.queryDevice(d.context, &d.attr); rc != 0) {
    d.failure = fmt::format("{}: ibv_query_device failed: {}", name, std::strerror(rc));
    return d;
  }
  d.pd = verbs.allocPd(d.context);
  if (!d.pd) d.failure = fmt::format("{}: ibv_alloc_pd failed: {}", name, std::strerror(errno));
  return d;
}

bool isIpv4Mapped(const ibv_gid& gid) {
  static constexpr uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, prefix, sizeof prefix) == 0;
}

// "RoCE v2" or "IB/RoCE v1": from the library where it can say, else from
// sysfs where the kernel has it; empty when neither knows.
std::string gidType(const VerbsApi& verbs, ibv_context* context, const std::string& device, int port, int index) {
  if (verbs.queryGidEx) {
    ibv_gid_entry entry{};
    if (verbs.queryGidEx(context, static_cast<uint32_t>(port), static_cast<uint32_t>(index), &entry, 0,
                         sizeof entry) == 0) {
      return entry.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1";
    }
  }
  std::ifstream in(fmt::format("/sys/class/infiniband/{}/ports/{}/gid_attrs/types/{}", device, port, index));
  std::string type;
  std::getline(in, type);
  return type;
}

// RoCE: the first RoCE v2 GID holding an IPv4 address (what NCCL picks by
// default), else the first IPv4 one where sysfs says nothing of types.
// InfiniBand: index 0.
Status chooseGid(const VerbsApi& verbs, const IbSettings& settings, const std::string& device, IbPort& p,
                 int tableLength) {
  auto query = [&](int index, ibv_gid& gid) { return verbs.queryGid(p.context, p.port, index, &gid); };
  if (settings.gidIndex >= 0 || !p.summary.ethernet) {
    p.gidIndex = std::max(settings.gidIndex, 0);
    if (const int rc = query(p.gidIndex, p.gid); rc != 0) {
      return systemError(fmt::format("{}: ibv_query_gid of index {} failed: {}", p.summary.name, p.gidIndex,
                                     std::strerror(rc)));
    }
    return {};
  }
  int fallback = -1;
  ibv_gid fallbackGid{};
  for (int i = 0; i < std::min(tableLength, 64); ++i) {
    ibv_gid gid{};
    if (query(i, gid) != 0 || !isIpv4Mapped(gid)) continue;
    const std::string type = gidType(verbs, p.context, device, p.port, i);
    if (type == "RoCE v2") {
      p.gidIndex = i;
      p.gid = gid;
      return {};
    }
    if (fallback < 0 && type.empty()) {
      fallback = i;
      fallbackGid = gid;
    }
  }
  if (fallback < 0) {
    return systemError(fmt::format("{}: no RoCE v2 GID with an IPv4 address (set HCL_IB_GID_INDEX)",
                                   p.summary.name));
  }
  p.gidIndex = fallback;
  p.gid = fallbackGid;
  return {};
}

}  // namespace

uint32_t portSpeedMbps(uint32_t activeSpeed, uint32_t activeWidth) {
  uint32_t lane = 0;
  switch (activeSpeed) {
    case 1: lane = 2500; break;      // SDR
    case 2: lane = 5000; break;      // DDR
    case 4: lane = 10000; break;     // QDR
    case 8: lane = 10000; break;     // FDR10
    case 16: lane = 14000; break;    // FDR
    case 32: lane = 25000; break;    // EDR
    case 64: lane = 50000; break;    // HDR
    case 128: lane = 100000; break;  // NDR
    case 256: lane = 200000; break;  // XDR
  }
  uint32_t lanes = 0;
  switch (activeWidth) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
  }
  return lane * lanes;
}

std::string fabricOf(bool ethernet, const ibv_gid& gid) {
  const uint8_t* s = gid.raw;
  if (ethernet) {
    if (isIpv4Mapped(gid)) return "roce";
    // No IPv4 address to find the network by: this GID alone.
    return fmt::format("roce:gid:{:02x}", fmt::join(s, s + 16, ""));
  }
  return fmt::format("ib:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}", s[0], s[1], s[2], s[3], s[4], s[5],
                     s[6], s[7]);
}

std::string publishedFabric(const IbPortSummary& port, const std::vector<NetAddress>& addresses) {
  if (!port.ethernet) return port.fabric;
  if (port.ipv4.empty()) return port.fabric;
  for (const NetAddress& a : addresses) {
    if (a.ip != port.ipv4) continue;
    return "roce:" + (a.fabric.empty() ? fmt::format("{}/{}", a.ip, a.prefixLen) : a.fabric);
  }
  return "roce:" + port.ipv4 + "/32";
}

Status findIbPorts(const VerbsApi& verbs, const IbSettings& settings, std::vector<IbPort>& out) {
  out.clear();
  const DeviceFilter filter = DeviceFilter::parse(settings.hcaText);
  int count = 0;
  ibv_device** list = verbs.getDeviceList(&count);
  if (!list) {
    if (errno == ENOSYS) return systemError(fmt::format("no RDMA device ({}: the kernel has no RDMA support)", verbs.library));
    return systemError(fmt::format("ibv_get_device_list failed: {}", std::strerror(errno)));
  }
  std::unique_ptr<ibv_device*, void (*)(ibv_device**)> owned(list, verbs.freeDeviceList);
  std::vector<std::string> seen;
  for (int d = 0; d < count; ++d) {
    const std::string name = verbs.getDeviceName(list[d]) ? verbs.getDeviceName(list[d]) : fmt::format("device{}", d);
    // iWARP and EFA devices take no reliable-connected SEND with immediate data.
    if (list[d]->transport_type != IBV_TRANSPORT_IB) {
      seen.push_back(name + " is not an InfiniBand or RoCE device");
      continue;
    }
    if (!filter.admitsSomePortOf(name)) {
      seen.push_back(name + " left out by HCL_IB_HCA");
      continue;
    }
    OpenedDevice& device = openedDevice(verbs, list[d], name);
    if (!device.failure.empty()) {
      seen.push_back(device.failure);
      continue;
    }
    for (int port = 1; port <= device.attr.phys_port_cnt; ++port) {
      IbPort p;
      p.summary.name = fmt::format("{}:{}", name, port);
      if (!filter.admits(name, port)) {
        seen.push_back(p.summary.name + " left out by HCL_IB_HCA");
        continue;
      }
      ibv_port_attr attr{};
      if (const int rc = verbs.queryPort(device.context, static_cast<uint8_t>(port), &attr); rc != 0) {
        seen.push_back(fmt::format("{}: ibv_query_port failed: {}", p.summary.name, std::strerror(rc)));
        continue;
      }
      if (attr.state != IBV_PORT_ACTIVE) {
        seen.push_back(p.summary.name + " not active");
        continue;
      }
      if (attr.link_layer != IBV_LINK_LAYER_INFINIBAND && attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
        seen.push_back(p.summary.name + " has a link layer other than InfiniBand or Ethernet");
        continue;
      }
      p.context = device.context;
      p.pd = device.pd;
      p.port = static_cast<uint8_t>(port);
      p.mtu = attr.active_mtu;
      p.lid = attr.lid;
      p.maxMessageBytes = attr.max_msg_sz;
      p.maxQpWr = device.attr.max_qp_wr;
      p.summary.ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
      p.summary.speedMbps = portSpeedMbps(attr.active_speed, attr.active_width);
      if (Status s = chooseGid(verbs, settings, name, p, attr.gid_tbl_len); !s.ok()) {
        seen.push_back(s.message());
        continue;
      }
      p.summary.fabric = fabricOf(p.summary.ethernet, p.gid);
      p.summary.gidIndex = p.gidIndex;
      if (p.summary.ethernet && isIpv4Mapped(p.gid)) {
        char text[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, p.gid.raw + 12, text, sizeof text);
        p.summary.ipv4 = text;
      }
      out.push_back(std::move(p));
    }
  }
  if (!out.empty()) return {};
  if (count == 0) return systemError(fmt::format("{} lists no RDMA device", verbs.library));
  return systemError(fmt::format("no usable RDMA port ({})", fmt::join(seen, "; ")));
}

}  // namespace hcl::ib
