// Transparent huge pages for the user's host buffers that peers reach through
// the kernel (process_vm_readv/writev). Every such copy pins and maps each
// page of both buffers; over 2 MiB pages instead of 4 KiB ones the copies,
// and this rank's own sums over the same buffers, ran 8-32% faster at
// 1-16 MiB (docs/performance.md). The user's memory keeps its contents; only
// its backing changes. A buffer of half a region or more has every region it
// touches collapsed; the kernel collapses only a region that lies wholly
// inside one private anonymous mapping, so nothing outside the buffer's own
// mapping changes, and within it at most a region's worth past each end.
//
// Collapsing a region took 0.6-0.9 ms on the development machine (several
// times that for a process's first), what 30-50 uses of the region save. A
// region is collapsed once calls have used it `collapseAfter` times (16 by
// default, sooner than that break-even: a buffer used 16 times is mostly one
// a loop keeps using, and the most a buffer dropped soon after wastes is one
// collapse per region). It is asked again every `collapseAfter` uses: a
// region that stayed huge answers in about a microsecond, and one whose
// memory was unmapped and mapped again since is collapsed anew.
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

  // This kernel's huge page size and madvise; never collapses where the
  // kernel has no transparent huge pages or they are set to "never".
  static HugePageAdvisor forThisHost(uint32_t collapseAfter);

  // A call used [p, p + bytes): one more use of every region it touches, and
  // a collapse of those whose turn it is.
  void noteUse(const void* p, size_t bytes);

  struct Stats {
    uint64_t collapsed = 0;  // collapses that succeeded
    uint64_t refused = 0;    // regions the kernel will not collapse (not asked again)
    uint64_t failed = 0;     // collapses that failed for now (asked again later)
  };
  Stats stats() const;
  size_t regionBytes() const { return regionBytes_; }
  size_t trackedRegions() const;

 private:
  static constexpr uint32_t kRefused = UINT32_MAX;
  // Bounds the table: past this many regions the counts start over.
  static constexpr size_t kMaxRegions = 16384;

  void collapseRegion(uintptr_t start, uint32_t& uses);

  uint32_t collapseAfter_;
  size_t regionBytes_;
  Collapse collapse_;
  mutable std::mutex mutex_;
  std::unordered_map<uintptr_t, uint32_t> uses_;  // region start -> uses, or kRefused
  Stats stats_;
};

}  // namespace hcl
