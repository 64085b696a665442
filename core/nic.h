// What a rank says about each of its network interfaces: the kind of NIC,
// its speed and the fabric it is attached to. Two ranks can talk over a NIC
// pair only when both NICs carry the same fabric label.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/peer_info.h"

namespace hcl {

struct NicFacts {
  NicKind kind = NicKind::Ethernet;
  uint32_t speedMbps = 0;  // 0: unknown
  std::string fabric;
};

// Reads the kind and speed of `ifname` from sysfs and derives its fabric:
// HCL_FABRIC if it names one, else the IB subnet prefix (IPoIB), else the IP
// subnet of (ip, prefixLen). HCL_NIC_SPEED overrides the speed.
NicFacts describeNic(std::string_view ifname, std::string_view ip, int prefixLen, bool loopback);

// HCL_FABRIC: "label" (every interface of this rank) or "ifname=label,...".
// Returns the label for `ifname`, or "" when the spec names none.
std::string fabricFromSpec(std::string_view spec, std::string_view ifname);

// HCL_NIC_SPEED: "rate" or "ifname=rate,..."; a rate is a number of Mbit/s or
// carries a unit: "125mbit", "1gbit", "200g", "25000". Returns 0 when the spec
// names no speed for `ifname` (or the rate does not parse).
uint32_t speedFromSpec(std::string_view spec, std::string_view ifname);
// The interface names an "ifname=value,..." spec mentions (none for a lone value).
std::vector<std::string> specInterfaceNames(std::string_view spec);

// Parses one rate to Mbit/s (core/rate.h: a unit-less "200g" or a bare
// number counts bits); 0 when invalid or beyond 2^32 Mbit/s.
uint32_t parseRateMbps(std::string_view text);

// What is wrong with an HCL_FABRIC (rates = false) or HCL_NIC_SPEED
// (rates = true) spec, naming the variable and the bad item; "" when nothing is.
std::string nicSpecProblem(std::string_view name, std::string_view spec, bool rates);

// "ip:10.0.0.0/24" style label from an address and prefix length; "" if the
// address does not parse.
std::string subnetLabel(std::string_view ip, int prefixLen);

// The IB subnet prefix of an IPoIB hardware address (20 bytes printed as
// "00:00:00:00:fe:80:..."): "ib:fe80:0000:0000:0000"; "" if malformed.
std::string ibSubnetLabel(std::string_view hardwareAddress);

}  // namespace hcl
