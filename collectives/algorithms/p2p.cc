#include "collectives/algorithms/p2p.h"

#include <deque>
#include <string>

#include "collectives/plan/collective.h"

namespace hcl {

bool selfExchangesPair(const std::vector<P2PCall>& calls, int rank, std::string& error) {
  std::vector<size_t> sends, recvs;
  for (const P2PCall& c : calls) {
    if (c.peer == rank) (c.isSend ? sends : recvs).push_back(c.bytes);
  }
  if (sends.size() != recvs.size()) {
    error = "rank " + std::to_string(rank) + " has " + std::to_string(sends.size()) + " send(s) to itself but " +
            std::to_string(recvs.size()) + " receive(s) from itself";
    return false;
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i] != recvs[i]) {
      error = "rank " + std::to_string(rank) + ": send to itself number " + std::to_string(i + 1) + " has " +
              std::to_string(sends[i]) + " bytes but the receive has " + std::to_string(recvs[i]);
      return false;
    }
  }
  return true;
}

bool p2pSchedule(const std::vector<P2PCall>& calls, int rank, Schedule& out, std::string& error) {
  if (!selfExchangesPair(calls, rank, error)) return false;
  out = Schedule{};
  out.tag = static_cast<uint32_t>(CollKind::SendRecv);
  out.algorithm = "p2p";
  ScheduleBuilder b(out);
  std::deque<const P2PCall*> selfSends, selfRecvs;
  for (const P2PCall& c : calls) {
    if (c.peer == rank) {
      (c.isSend ? selfSends : selfRecvs).push_back(&c);
    } else if (c.isSend) {
      b.send(c.peer, userAt(c.buffer), c.bytes);
    } else {
      b.recv(c.peer, userAt(c.buffer), c.bytes);
    }
  }
  for (size_t i = 0; i < selfSends.size(); ++i) {
    b.copy(userAt(selfRecvs[i]->buffer), userAt(selfSends[i]->buffer), selfSends[i]->bytes);
  }
  return true;
}

}  // namespace hcl
