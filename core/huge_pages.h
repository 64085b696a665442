// Transparent huge pages for the user's host buffers that the direct
// algorithms reach across processes (process_vm_readv/writev). Every such
// copy pins and maps each page of both buffers; over 2 MiB pages instead of
// 4 KiB ones the copies, and this rank's own sums over the same buffers, ran
// 10-35% faster at 2-16 MiB (docs/performance.md). The kernel collapses a
// region in place (madvise MADV_COLLAPSE, Linux 6.1): the contents stay, only
// the backing changes.
//
// Which regions: those of which at least half lies inside a buffer. The
// kernel fills a collapsed region, so past each end of a buffer at most half
// a region of memory the buffer does not cover becomes resident; and it
// collapses only a region that lies wholly inside one mapping.
//
// When: collapsing a region took 0.6-0.9 ms on the development machine
// (several times that for a process's first), what 30-50 uses of the region
// save. A region is asked once calls have used it `collapseAfter` times (16
// by default, sooner than that break-even: a buffer used 16 times is mostly
// one a loop keeps using). After each ask the wait until the next one
// doubles, up to 64 times `collapseAfter` uses: a region that stayed huge
// answers in microseconds, one whose memory was mapped anew is collapsed
// again, and one the kernel cannot collapse (a mapping boundary, pinned
// pages, no free huge page) costs less and less. A buffer with a region
// wholly inside it collapsed already is one a loop keeps using, so its
// regions never asked yet are asked at once: a larger call over the same
// allocation, as in a sweep of sizes, gains from its first call. One call
// asks at most 32 regions (about 25 ms); the others wait for the next call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace hcl {

class HugePageAdvisor {
 public:
  // Collapses [region, region + bytes); returns 0 or an errno value, as
  // madvise(MADV_COLLAPSE) does.
  using Collapse = std::function<int(void* region, size_t bytes)>;

  // collapseAfter 0 or regionBytes 0: never collapses.
  HugePageAdvisor(uint32_t collapseAfter, size_t regionBytes, Collapse collapse);

  // madvise on this host; never collapses where transparent huge pages are
  // missing or set to "never", or where their size is not the 2 MiB measured
  // (64 KiB-page arm64 kernels have 512 MiB ones).
  static HugePageAdvisor forThisHost(uint32_t collapseAfter);

  // A call used [p, p + bytes) and [q, q + qBytes) (either may be empty):
  // one more use of each region at least half inside one of them (once where
  // their regions overlap), and an ask of those whose turn it is, at most
  // 32 in one call.
  void noteUse(const void* p, size_t bytes, const void* q = nullptr, size_t qBytes = 0);

  struct Stats {
    uint64_t collapsed = 0;  // asks the kernel accepted
    uint64_t failed = 0;     // asks it did not
  };
  Stats stats() const;
  size_t trackedRegions() const;

 private:
  struct Region {
    uint32_t uses = 0;       // since the last ask
    uint32_t wait = 0;       // uses between asks; 0 until the first ask
    bool collapsed = false;  // the kernel accepted the last ask
  };
  // A buffer's regions, as region numbers (address / regionBytes): those at
  // least half inside, and those wholly inside.
  struct Span {
    uintptr_t first = 0, count = 0;
    uintptr_t innerFirst = 0, innerCount = 0;
  };
  static constexpr uint32_t kMaxWaitFactor = 64;
  // Bounds the table: past this many regions the counts start over, and
  // buffers that touch more are left alone.
  static constexpr size_t kMaxRegions = 16384;
  // Bounds one call's stall (about 0.6-0.9 ms an ask); the rest wait for
  // the next call.
  static constexpr size_t kMaxAsksPerCall = 32;

  Span spanOf(const void* at, size_t bytes) const;
  bool keptIn(const Span& span) const;  // a region wholly inside is collapsed
  void noteRegions(uintptr_t first, uintptr_t count, bool kept, size_t& asksLeft);
  void ask(uintptr_t start, Region& region);

  uint32_t collapseAfter_;
  size_t regionBytes_;
  Collapse collapse_;
  mutable std::mutex mutex_;
  std::unordered_map<uintptr_t, Region> regions_;  // by the region's start
  Stats stats_;
};

}  // namespace hcl
