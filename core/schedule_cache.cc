#include "core/schedule_cache.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace hcl {
namespace {

// Large messages spend far longer moving data than planning, and their
// schedules are long: only short programs are kept.
constexpr size_t kMaxCachedSteps = 4096;
// All entries together (a Step is ~140 bytes: ~9 MB at most).
constexpr size_t kMaxTotalSteps = 64 * 1024;

size_t mix(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)); }

// Within each run of consecutive posts, sends go first. Posting never
// blocks, and each peer's sends (and receives) keep their order, so nothing
// changes but timing: a transport may take a message that is already there
// when its receive is posted (shm), and a send behind that look would wait
// for a cache miss on the critical path of every exchange.
void postSendsFirst(std::vector<Step>& steps) {
  const auto isPost = [](const Step& st) { return st.kind == Step::Kind::Send || st.kind == Step::Kind::Recv; };
  for (auto it = steps.begin(); it != steps.end();) {
    if (!isPost(*it)) {
      ++it;
      continue;
    }
    const auto end = std::find_if_not(it, steps.end(), isPost);
    std::stable_partition(it, end, [](const Step& st) { return st.kind == Step::Kind::Send; });
    it = end;
  }
}

}  // namespace

std::shared_ptr<const PreparedSchedule> prepareSchedule(Schedule schedule) {
  postSendsFirst(schedule.steps);
  auto p = std::make_shared<PreparedSchedule>();
  p->transferPeer.assign(schedule.transfers, -1);
  for (const Step& st : schedule.steps) {
    p->direct = p->direct || st.kind == Step::Kind::ReadPeer || st.kind == Step::Kind::WritePeer ||
                st.kind == Step::Kind::ReducePeer || st.kind == Step::Kind::CheckPeerSizes ||
                st.a.id == BufferId::Addresses || st.dst.id == BufferId::Addresses;
    p->stages = p->stages || st.only == Only::Staged;
    if (st.kind == Step::Kind::Send || st.kind == Step::Kind::Recv) {
      p->transferPeer[st.transfer] = st.peer;
      if (std::find(p->peers.begin(), p->peers.end(), st.peer) == p->peers.end()) p->peers.push_back(st.peer);
    }
  }
  p->schedule = std::move(schedule);
  return p;
}

size_t ScheduleCache::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<size_t>{}(k.count);
  h = mix(h, static_cast<size_t>(k.kind) | static_cast<size_t>(k.type) << 8 |
                 static_cast<size_t>(k.loadIsIdentity) << 16 | static_cast<size_t>(k.inPlace) << 17 |
                 static_cast<size_t>(k.rankDependentLoad) << 18);
  h = mix(h, static_cast<size_t>(k.root));
  h = mix(h, k.chunkBytes);
  return mix(h, std::hash<const void*>{}(k.topology));
}

std::shared_ptr<const PreparedSchedule> ScheduleCache::get(const Planner& planner, const CollArgs& args) {
  const Key key{args.kind, args.type,  args.loadIsIdentity, args.rankDependentLoad, args.inPlace,
                args.root, args.count, args.chunkBytes,     args.topology};
  if (!last_ || !(key == lastKey_)) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      auto prepared = prepareSchedule(planner.plan(args));
      if (prepared->schedule.steps.size() > kMaxCachedSteps) return prepared;
      if (totalSteps_ + prepared->schedule.steps.size() > kMaxTotalSteps) {
        // Full: start afresh. Schedules that runs still hold stay with them.
        entries_.clear();
        last_ = nullptr;
        totalSteps_ = 0;
      }
      totalSteps_ += prepared->schedule.steps.size();
      it = entries_.emplace(key, std::move(prepared)).first;
    }
    lastKey_ = key;
    last_ = &it->second;
  }
  return *last_;
}

}  // namespace hcl
