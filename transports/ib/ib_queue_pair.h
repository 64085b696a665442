// Reliable-connected queue pairs for verbs links: creating one, what its
// two ends tell each other, and taking it to ready-to-send towards a peer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "transports/ib/ib_net.h"
#include "transports/ib/ib_ports.h"
#include "transports/ib/verbs_api.h"

namespace hcl::ib {

inline constexpr uint32_t kQpInfoMagic = 0x48434c51;  // "HCLQ"

// What the two ends of a queue pair tell each other over the side
// connection, little-endian on the wire. The nonce is the listen handle's:
// it ties the answer to the handle.
struct QpInfo {
  uint32_t magic = kQpInfoMagic;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;
  uint8_t mtu = 0;
  uint8_t ethernet = 0;
  uint8_t gid[16] = {};
  uint64_t nonce = 0;
};

inline constexpr size_t kQpInfoWireBytes = 40;
std::array<uint8_t, kQpInfoWireBytes> encodeQpInfo(const QpInfo& info);
QpInfo decodeQpInfo(const std::array<uint8_t, kQpInfoWireBytes>& wire);

// A queue pair in INIT on `port`, with its own completion queue, deep
// enough for `depth` requests in the direction it is used for.
Status createQueuePair(const VerbsApi& verbs, const IbPort& port, bool sending, int depth, const std::string& where,
                       ibv_cq** cq, ibv_qp** qp);

// This end's part, with a fresh packet sequence number.
QpInfo describeQueuePair(const ibv_qp& qp, const IbPort& port, uint64_t nonce);

// INIT -> RTR -> RTS towards the peer's queue pair; refuses a peer on the
// other link layer or, on InfiniBand, another subnet.
Status connectQueuePair(const VerbsApi& verbs, ibv_qp* qp, const IbPort& port, const IbSettings& settings,
                        const QpInfo& mine, const QpInfo& peer, const std::string& where);

}  // namespace hcl::ib
