// Network interfaces and the HCL_SOCKET_IFNAME / NCCL_SOCKET_IFNAME filter.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/peer_info.h"

namespace hcl {

struct NetInterface {
  std::string name;  // "eth0"
  std::string ip;    // numeric address
  int family = 0;    // AF_INET or AF_INET6
  int prefixLen = 0;
  bool loopback = false;
  // Filled by chooseInterfaces() (core/nic.h).
  NicKind kind = NicKind::Ethernet;
  uint32_t speedMbps = 0;
  std::string fabric;
};

// Every up interface with an address (one entry per address).
std::vector<NetInterface> listInterfaces();

// NCCL's syntax: "eth,ib" prefixes; "^docker" excludes prefixes; "=eth0"
// exact names; "^=lo" excludes exact names. Empty spec matches everything.
bool interfaceMatches(std::string_view spec, std::string_view name);

// The interfaces HCL uses for sockets: those matching HCL_SOCKET_IFNAME if
// set; otherwise every non-loopback, non-docker interface, falling back to
// loopback when there is nothing else. HCL_SOCKET_FAMILY (AF_INET/AF_INET6)
// restricts the family. Each carries its NIC facts (kind, speed, fabric).
std::vector<NetInterface> chooseInterfaces();

// Parses "host:port" or "[v6]:port"; resolves host names to a numeric IP.
// On failure `why` (when given) says what is wrong with the text.
bool parseHostPort(std::string_view text, std::string& ip, uint16_t& port, std::string* why = nullptr);

}  // namespace hcl
