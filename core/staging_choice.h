// Whether a run that can either stage its data through shared scratch or
// move it straight between the ranks' buffers (Only::Staged, Only::Direct in
// collectives/plan/schedule.h) should stage. Which is faster depends on where
// the ranks run: a store into a line another core has read waits for that
// copy's invalidation, cheap within a core complex and several times dearer
// across them (or where a virtual machine's host moves its CPUs apart), and
// staging pays it on every line. So each communicator measures: per call
// shape, each way keeps its last few call times, the faster one is
// proposed (staging until it takes kStagingMargin times as long as going
// straight), and the other is tried again now and then, less often each time
// it loses, so that a change is noticed within a few calls. A try runs
// kTryCalls calls in a row: a call that goes the other way than the one
// before finds the caches holding what that one touched (staging's regions
// cold, or an output last stored past the cache), which the way that runs
// call after call never pays; so it is no sample. Nor are calls that fault
// memory in (the first of each way, ones on fresh scratch). A shape not
// measured yet starts with the way the last measured one led with (what
// makes staging slow holds for every size), and once some shape has
// measured both ways, tries the other way only after kFirstInterval calls:
// a try on a shape of few calls (a sweep's largest sizes) is a large part
// of them. The first rank's proposal decides for all (every rank reads it
// from the exchanged addresses), so the ranks' tries need not line up. Used
// under the communicator's execution gate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace hcl {

class StagingChoice {
 public:
  enum class Mode { Measure, Always, Never };
  explicit StagingChoice(Mode mode = Mode::Measure) : mode_(mode) {}

  struct Shape {
    uint32_t tag = 0;  // the collective
    uint64_t sendBytes = 0, recvBytes = 0;
    bool operator==(const Shape&) const = default;
  };
  // Whether this rank proposes staging for its next call of `shape`.
  bool propose(const Shape& shape);
  // How long a call of `shape` took, and which way it went. True where
  // that turned which way leads (leadsWithStaging() says which now).
  bool record(const Shape& shape, bool staged, int64_t nanoseconds);
  // A call of `shape` that is no sample (it faulted memory in), which way
  // it went: the call after it is no sample either if it goes the other.
  void skip(const Shape& shape, bool staged);
  bool leadsWithStaging(const Shape& shape);
  // The estimate of one way for `shape`, 0 where not measured yet.
  int64_t estimateNanos(const Shape& shape, bool staged);

  // Calls before the first try of the other way in a shape (the first
  // call pays for faulting the memory in), where no shape has measured both
  // ways yet; then between two tries of the way that lost, after the lead
  // changed or was taken from a shape that measured both, and at most.
  static constexpr uint32_t kFirstTry = 3, kFirstInterval = 8, kMaxInterval = 256;
  static constexpr uint32_t kTryCalls = 2;
  // Staging leads until it takes this much longer than going straight. A
  // try of staging still finds its regions colder than calls in a row do
  // (2 ranks, 1 MiB all-gather: 50 us after thirty direct calls, against
  // 42), while what makes staging slow costs it several times over.
  static constexpr double kStagingMargin = 1.2;

 private:
  struct Way {
    std::array<int64_t, 3> recent{};
    uint64_t samples = 0;
    bool warm = false;  // its first call, which faults its memory in, is not a sample
    int64_t estimate() const;  // median of the recent samples
  };
  struct Entry {
    Way staged, direct;
    bool stagedFirst = true;  // which way leads until both are measured
    uint32_t sinceTry = 0;
    uint32_t interval = kFirstTry;
    uint32_t tryCallsLeft = 0;  // of the try under way, after this call
    int lastStaged = -1;  // the way of the last call recorded: 1 staged, 0 direct
  };
  struct ShapeHash {
    size_t operator()(const Shape& s) const;
  };
  static bool stagingLeads(const Entry& e);
  Entry& entry(const Shape& shape);

  static constexpr size_t kMaxShapes = 64;
  Mode mode_;
  bool lastLead_ = true;  // staging led in the last call measured
  bool measuredBoth_ = false;  // some shape has measured both ways
  std::unordered_map<Shape, Entry, ShapeHash> entries_;
};

}  // namespace hcl
