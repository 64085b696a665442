#include "collectives/algorithms/p2p.h"

#include <deque>
#include <string>

#include "collectives/plan/collective.h"

namespace hcl {

bool p2pSchedule(const std::vector<P2PCall>& calls, int rank, Schedule& out, std::string& error) {
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
  if (selfSends.size() != selfRecvs.size()) {
    error = "rank " + std::to_string(rank) + " has " + std::to_string(selfSends.size()) +
            " send(s) to itself but " + std::to_string(selfRecvs.size()) +
            " receive(s) from itself in the group";
    return false;
  }
  for (size_t i = 0; i < selfSends.size(); ++i) {
    if (selfSends[i]->bytes != selfRecvs[i]->bytes) {
      error = "send to self of " + std::to_string(selfSends[i]->bytes) +
              " bytes does not match receive from self of " + std::to_string(selfRecvs[i]->bytes) +
              " bytes";
      return false;
    }
    b.copy(userAt(selfRecvs[i]->buffer), userAt(selfSends[i]->buffer), selfSends[i]->bytes);
  }
  return true;
}

}  // namespace hcl
