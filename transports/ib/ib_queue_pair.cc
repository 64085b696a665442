#include "transports/ib/ib_queue_pair.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/wire_order.h"

namespace hcl::ib {
namespace {

ibv_mtu mtuFromCode(uint8_t code) {
  return code >= IBV_MTU_256 && code <= IBV_MTU_4096 ? static_cast<ibv_mtu>(code) : IBV_MTU_1024;
}

uint32_t randomPsn() {
  thread_local std::mt19937 engine(std::random_device{}());
  return engine() & 0xffffff;
}

}  // namespace

Status createQueuePair(const VerbsApi& verbs, const IbPort& p, bool sending, int depth, const std::string& where,
                       ibv_cq** cq, ibv_qp** qp) {
  *cq = verbs.createCq(p.context, 2 * depth, nullptr, nullptr, 0);
  if (!*cq) return errnoError(where + ": ibv_create_cq", errno);
  ibv_qp_init_attr init{};
  init.send_cq = *cq;
  init.recv_cq = *cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = sending ? static_cast<uint32_t>(depth) : 1;
  init.cap.max_recv_wr = sending ? 1 : static_cast<uint32_t>(depth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  *qp = verbs.createQp(p.pd, &init);
  if (!*qp) return errnoError(where + ": ibv_create_qp", errno);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = p.port;
  a.qp_access_flags = 0;
  const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (const int rc = verbs.modifyQp(*qp, &a, mask); rc != 0) return errnoError(where + ": queue pair to INIT", rc);
  return {};
}

std::array<uint8_t, kQpInfoWireBytes> encodeQpInfo(const QpInfo& info) {
  std::array<uint8_t, kQpInfoWireBytes> wire{};
  storeLittleEndian(wire.data(), info.magic);
  storeLittleEndian(wire.data() + 4, info.qpn);
  storeLittleEndian(wire.data() + 8, info.psn);
  storeLittleEndian(wire.data() + 12, info.lid);
  wire[14] = info.mtu;
  wire[15] = info.ethernet;
  std::memcpy(wire.data() + 16, info.gid, sizeof info.gid);
  storeLittleEndian(wire.data() + 32, info.nonce);
  return wire;
}

QpInfo decodeQpInfo(const std::array<uint8_t, kQpInfoWireBytes>& wire) {
  QpInfo info;
  info.magic = loadLittleEndian<uint32_t>(wire.data());
  info.qpn = loadLittleEndian<uint32_t>(wire.data() + 4);
  info.psn = loadLittleEndian<uint32_t>(wire.data() + 8);
  info.lid = loadLittleEndian<uint16_t>(wire.data() + 12);
  info.mtu = wire[14];
  info.ethernet = wire[15];
  std::memcpy(info.gid, wire.data() + 16, sizeof info.gid);
  info.nonce = loadLittleEndian<uint64_t>(wire.data() + 32);
  return info;
}

QpInfo describeQueuePair(const ibv_qp& qp, const IbPort& port, uint64_t nonce) {
  QpInfo info;
  info.qpn = qp.qp_num;
  info.psn = randomPsn();
  info.lid = port.lid;
  info.mtu = static_cast<uint8_t>(port.mtu);
  info.ethernet = port.summary.ethernet ? 1 : 0;
  std::memcpy(info.gid, port.gid.raw, 16);
  info.nonce = nonce;
  return info;
}

Status connectQueuePair(const VerbsApi& verbs, ibv_qp* qp, const IbPort& p, const IbSettings& settings,
                        const QpInfo& mine, const QpInfo& peer, const std::string& where) {
  if (peer.ethernet != (p.summary.ethernet ? 1 : 0)) {
    return systemError(fmt::format("{}: the peer's port is {} and this one {}", where,
                                   peer.ethernet ? "RoCE" : "InfiniBand", p.summary.ethernet ? "RoCE" : "InfiniBand"));
  }
  // InfiniBand routes by LID within one subnet only.
  if (!p.summary.ethernet && std::memcmp(peer.gid, p.gid.raw, 8) != 0) {
    return systemError(fmt::format("{}: the peer's port is on another InfiniBand subnet", where));
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = std::min(p.mtu, mtuFromCode(peer.mtu));
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 1;
  // 0.64 ms (NCCL's value): links keep receives posted, so a sender meets
  // a NAK only when it runs more than a few pieces ahead.
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = p.port;
  a.ah_attr.sl = static_cast<uint8_t>(settings.serviceLevel);
  if (p.summary.ethernet) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(p.gidIndex);
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = static_cast<uint8_t>(settings.trafficClass);
  } else {
    a.ah_attr.dlid = peer.lid;
  }
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (const int rc = verbs.modifyQp(qp, &a, mask); rc != 0) return errnoError(where + ": queue pair to RTR", rc);
  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.timeout = static_cast<uint8_t>(settings.timeout);
  s.retry_cnt = static_cast<uint8_t>(settings.retryCount);
  s.rnr_retry = 7;  // retry for ever while the peer has no receive posted
  s.sq_psn = mine.psn;
  s.max_rd_atomic = 1;
  mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  if (const int rc = verbs.modifyQp(qp, &s, mask); rc != 0) return errnoError(where + ": queue pair to RTS", rc);
  return {};
}

}  // namespace hcl::ib
