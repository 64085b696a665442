#include "collectives/plan/schedule_timing.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace hcl {
namespace {

struct PostedSend {
  uint32_t transfer;
  double postedAt;
  size_t bytes;
};
struct PostedRecv {
  uint32_t transfer;
  double postedAt;
  size_t bytes;
};

struct RankState {
  size_t pc = 0;
  double clock = 0;
  std::vector<double> doneAt;  // per transfer; negative until known
};

class Replay {
 public:
  Replay(const std::vector<Schedule>& schedules, const LinkGraph& graph)
      : schedules_(schedules), graph_(graph), n_(schedules.size()) {
    ranks_.resize(n_);
    for (size_t r = 0; r < n_; ++r) ranks_[r].doneAt.assign(schedules[r].transfers, -1.0);
    sends_.resize(n_ * n_);
    recvs_.resize(n_ * n_);
    const size_t classes = graph.classNames.size();
    egressFree_.assign(n_ * classes, 0.0);
    ingressFree_.assign(n_ * classes, 0.0);
    result_.classesUsed.assign(classes, false);
  }

  ScheduleEstimate run() {
    bool progress = true;
    while (progress && !mismatch_) {
      progress = false;
      for (size_t r = 0; r < n_; ++r) progress |= advance(r);
    }
    if (mismatch_) return {};
    double end = 0;
    for (size_t r = 0; r < n_; ++r) {
      if (ranks_[r].pc != schedules_[r].steps.size()) return {};
      double t = ranks_[r].clock;
      for (double d : ranks_[r].doneAt) {
        if (d < 0) return {};
        t = std::max(t, d);
      }
      end = std::max(end, t);
    }
    result_.valid = true;
    result_.us = end;
    return result_;
  }

 private:
  // Runs rank r until it blocks; true if it moved.
  bool advance(size_t r) {
    RankState& st = ranks_[r];
    const auto& steps = schedules_[r].steps;
    bool moved = false;
    while (st.pc < steps.size()) {
      const Step& s = steps[st.pc];
      // Plans are priced for buffers from malloc, the common case.
      if (s.only == Only::Direct) {
        ++st.pc;
        continue;
      }
      switch (s.kind) {
        case Step::Kind::Send:
          sends_[pairIndex(r, static_cast<size_t>(s.peer))].push_back({s.transfer, st.clock, s.bytes});
          match(r, static_cast<size_t>(s.peer));
          break;
        case Step::Kind::Recv:
          recvs_[pairIndex(static_cast<size_t>(s.peer), r)].push_back({s.transfer, st.clock, s.bytes});
          match(static_cast<size_t>(s.peer), r);
          break;
        case Step::Kind::CheckPeerSizes:
          break;
        case Step::Kind::Wait:
          if (st.doneAt[s.transfer] < 0) return moved;
          st.clock = std::max(st.clock, st.doneAt[s.transfer]);
          break;
        case Step::Kind::Copy:
          st.clock += static_cast<double>(s.bytes) / graph_.reduceBytesPerUs;
          break;
        case Step::Kind::ReadPeer:
        case Step::Kind::WritePeer:
        case Step::Kind::ReducePeer: {
          // The rank itself copies across the link (and then reduces).
          const int cls = graph_.classBetween(static_cast<int>(r), s.peer);
          st.clock += static_cast<double>(s.bytes) / graph_.costs[static_cast<size_t>(cls)].bytesPerUs;
          if (s.kind == Step::Kind::ReducePeer) st.clock += static_cast<double>(s.count) * 4 / graph_.reduceBytesPerUs;
          result_.classesUsed[static_cast<size_t>(cls)] = true;
          break;
        }
        case Step::Kind::Reduce:
        case Step::Kind::Convert:
          // Plans are priced on float32, 4 bytes per element.
          st.clock += static_cast<double>(s.count) * 4 / graph_.reduceBytesPerUs;
          break;
      }
      ++st.pc;
      moved = true;
    }
    return moved;
  }

  size_t pairIndex(size_t src, size_t dst) const { return src * n_ + dst; }

  void match(size_t src, size_t dst) {
    auto& sq = sends_[pairIndex(src, dst)];
    auto& rq = recvs_[pairIndex(src, dst)];
    while (!sq.empty() && !rq.empty()) {
      const PostedSend s = sq.front();
      const PostedRecv q = rq.front();
      sq.pop_front();
      rq.pop_front();
      if (s.bytes != q.bytes) {
        mismatch_ = true;
        return;
      }
      const int cls = graph_.classBetween(static_cast<int>(src), static_cast<int>(dst));
      const LinkCost& cost = graph_.costs[static_cast<size_t>(cls)];
      const size_t classes = graph_.classNames.size();
      double& egress = egressFree_[src * classes + static_cast<size_t>(cls)];
      double& ingress = ingressFree_[dst * classes + static_cast<size_t>(cls)];
      const double start = std::max({s.postedAt, q.postedAt, egress, ingress});
      const double busy = static_cast<double>(s.bytes) / cost.bytesPerUs;
      egress = ingress = start + busy;
      const double done = start + busy + cost.alphaUs;
      ranks_[src].doneAt[s.transfer] = done;
      ranks_[dst].doneAt[q.transfer] = done;
      if (s.bytes > 0) result_.classesUsed[static_cast<size_t>(cls)] = true;
    }
  }

  const std::vector<Schedule>& schedules_;
  const LinkGraph& graph_;
  size_t n_;
  std::vector<RankState> ranks_;
  std::vector<std::deque<PostedSend>> sends_;
  std::vector<std::deque<PostedRecv>> recvs_;
  std::vector<double> egressFree_, ingressFree_;
  ScheduleEstimate result_;
  bool mismatch_ = false;
};

}  // namespace

ScheduleEstimate estimateSchedules(const std::vector<Schedule>& schedules, const LinkGraph& graph) {
  if (static_cast<int>(schedules.size()) != graph.nranks) return {};
  return Replay(schedules, graph).run();
}

}  // namespace hcl
