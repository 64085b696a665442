#include "core/staging_choice.h"

#include <algorithm>
#include <functional>

namespace hcl {

int64_t StagingChoice::Way::estimate() const {
  const size_t n = std::min<size_t>(samples, recent.size());
  std::array<int64_t, 3> sorted = recent;
  std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n));
  return sorted[n / 2];  // of two, the slower
}

size_t StagingChoice::ShapeHash::operator()(const Shape& s) const {
  const size_t h = std::hash<uint64_t>{}(s.sendBytes * 0x9e3779b97f4a7c15ull ^ s.recvBytes);
  return h ^ (static_cast<size_t>(s.tag) << 1);
}

bool StagingChoice::stagingLeads(const Entry& e) {
  if (e.staged.samples == 0 || e.direct.samples == 0) return e.stagedFirst;
  return static_cast<double>(e.staged.estimate()) <= static_cast<double>(e.direct.estimate()) * kStagingMargin;
}

StagingChoice::Entry& StagingChoice::entry(const Shape& shape) {
  auto it = entries_.find(shape);
  if (it != entries_.end()) return it->second;
  if (entries_.size() >= kMaxShapes) entries_.clear();
  Entry& e = entries_[shape];
  // Staging is what the planner chose, unless it was slower last time.
  e.stagedFirst = lastLead_;
  if (measuredBoth_) e.interval = kFirstInterval;
  return e;
}

bool StagingChoice::propose(const Shape& shape) {
  if (mode_ != Mode::Measure) return mode_ == Mode::Always;
  Entry& e = entry(shape);
  const bool lead = stagingLeads(e);
  if (e.tryCallsLeft > 0) {
    --e.tryCallsLeft;
    return !lead;
  }
  if (++e.sinceTry < e.interval) return lead;
  e.sinceTry = 0;
  e.tryCallsLeft = kTryCalls - 1;
  return !lead;
}

bool StagingChoice::leadsWithStaging(const Shape& shape) { return stagingLeads(entry(shape)); }

int64_t StagingChoice::estimateNanos(const Shape& shape, bool staged) {
  const Way& way = staged ? entry(shape).staged : entry(shape).direct;
  return way.samples == 0 ? 0 : way.estimate();
}

void StagingChoice::skip(const Shape& shape, bool staged) {
  if (mode_ == Mode::Measure) entry(shape).lastStaged = staged ? 1 : 0;
}

bool StagingChoice::record(const Shape& shape, bool staged, int64_t nanoseconds) {
  if (mode_ != Mode::Measure) return false;
  Entry& e = entry(shape);
  const bool lead = stagingLeads(e);
  Way& way = staged ? e.staged : e.direct;
  const Way& other = staged ? e.direct : e.staged;
  const bool turnedWay = e.lastStaged >= 0 && (e.lastStaged == 1) != staged;
  e.lastStaged = staged ? 1 : 0;
  if (!way.warm) {
    way.warm = true;
    return false;
  }
  if (turnedWay) return false;
  if (staged != lead) {
    // A try of the way behind: one that beat the leader brings the next try
    // closer (the estimate needs a second such call to turn), one that lost
    // puts it further off.
    const bool beat = other.samples > 0 && nanoseconds < other.estimate();
    e.interval = beat ? kFirstInterval : std::min(e.interval * 2, kMaxInterval);
  }
  way.recent[way.samples % way.recent.size()] = nanoseconds;
  ++way.samples;
  lastLead_ = stagingLeads(e);
  if (e.staged.samples > 0 && e.direct.samples > 0) measuredBoth_ = true;
  if (lastLead_ == lead) return false;
  // The way that lost may win back soon (the ranks' CPUs moved).
  e.interval = kFirstInterval;
  e.sinceTry = 0;
  return true;
}

}  // namespace hcl
