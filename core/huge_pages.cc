#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include "core/log.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1
#endif

namespace hcl {
namespace {

// The PMD-mapped huge page size, or 0 where transparent huge pages are
// missing or switched off ("never").
size_t transparentHugePageBytes() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(mode, line) || line.find("[never]") != std::string::npos) return 0;
  std::ifstream size("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  size_t bytes = 0;
  if (!(size >> bytes)) return 0;
  return bytes;
}

int madviseCollapse(void* region, size_t bytes) { return ::madvise(region, bytes, MADV_COLLAPSE) == 0 ? 0 : errno; }

}  // namespace

HugePageAdvisor::HugePageAdvisor(uint32_t collapseAfter, size_t regionBytes, Collapse collapse)
    : collapseAfter_(collapseAfter), regionBytes_(regionBytes), collapse_(std::move(collapse)) {}

HugePageAdvisor HugePageAdvisor::forThisHost(uint32_t collapseAfter) {
  constexpr size_t kMeasured = size_t{2} << 20;
  const size_t bytes = collapseAfter ? transparentHugePageBytes() : 0;
  return HugePageAdvisor(collapseAfter, bytes == kMeasured ? bytes : 0, madviseCollapse);
}

void HugePageAdvisor::noteUse(const void* p, size_t bytes, const void* q, size_t qBytes) {
  if (collapseAfter_ == 0 || regionBytes_ == 0) return;
  // As [begin, end) ranges; one that cannot be a buffer (past the end of the
  // address space) is dropped.
  auto range = [](const void* at, size_t n, uintptr_t& begin, uintptr_t& end) {
    begin = reinterpret_cast<uintptr_t>(at);
    end = begin + n;
    return at != nullptr && n > 0 && end > begin;
  };
  uintptr_t b1 = 0, e1 = 0, b2 = 0, e2 = 0;
  const bool has1 = range(p, bytes, b1, e1);
  const bool has2 = range(q, qBytes, b2, e2);
  std::lock_guard lock(mutex_);
  // Ranges less than a region apart could share one: counted as one range.
  if (has1 && has2 && b2 < e1 + regionBytes_ && b1 < e2 + regionBytes_) {
    noteRange(std::min(b1, b2), std::max(e1, e2));
    return;
  }
  if (has1) noteRange(b1, e1);
  if (has2) noteRange(b2, e2);
}

void HugePageAdvisor::noteRange(uintptr_t begin, uintptr_t end) {
  const size_t half = regionBytes_ / 2;
  if (end - begin < half) return;
  // Regions at least half covered: those that start before end - half and
  // end after begin + half.
  const uintptr_t first = (begin + half) / regionBytes_ * regionBytes_;
  const uintptr_t last = (end - half) / regionBytes_ * regionBytes_;  // inclusive
  if (last < first) return;
  const size_t count = (last - first) / regionBytes_ + 1;
  if (count > kMaxRegions) return;
  if (regions_.size() + count > kMaxRegions) regions_.clear();
  bool kept = false;
  for (uintptr_t start = first; start <= last && !kept; start += regionBytes_) {
    if (start < begin || start + regionBytes_ > end) continue;  // an end region: its neighbours' too
    const auto it = regions_.find(start);
    kept = it != regions_.end() && it->second.collapsed;
  }
  for (uintptr_t start = first; start <= last; start += regionBytes_) {
    Region& r = regions_[start];
    ++r.uses;
    if (r.wait == 0 ? (kept || r.uses >= collapseAfter_) : r.uses >= r.wait) ask(start, r);
  }
}

void HugePageAdvisor::ask(uintptr_t start, Region& region) {
  const uint32_t maxWait = collapseAfter_ * kMaxWaitFactor;
  const uint32_t wait = region.wait == 0 ? collapseAfter_ : region.wait;
  region.wait = wait >= maxWait / 2 ? maxWait : wait * 2;
  region.uses = 0;
  const auto began = std::chrono::steady_clock::now();
  const int err = collapse_(reinterpret_cast<void*>(start), regionBytes_);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - began).count();
  region.collapsed = err == 0;
  if (err == 0) {
    if (stats_.collapsed++ == 0) {
      log::info(log::Alloc, "huge pages: a {} KiB region of a buffer collapsed in {:.0f} us", regionBytes_ >> 10, us);
    }
    log::trace(log::Alloc, "huge pages: region {:#x} collapsed in {:.0f} us; next ask after {} uses", start, us,
               region.wait);
    return;
  }
  // EINVAL where the region crosses a mapping's boundary or is marked
  // MADV_NOHUGEPAGE, EAGAIN for pinned pages or no free huge page: the
  // doubling wait makes each cheaper.
  if (stats_.failed++ == 0) {
    log::info(log::Alloc, "huge pages: region {:#x} of a buffer not collapsed: {}", start, std::strerror(err));
  }
  log::trace(log::Alloc, "huge pages: region {:#x} not collapsed: {}; next ask after {} uses", start,
             std::strerror(err), region.wait);
}

HugePageAdvisor::Stats HugePageAdvisor::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

size_t HugePageAdvisor::trackedRegions() const {
  std::lock_guard lock(mutex_);
  return regions_.size();
}

}  // namespace hcl
