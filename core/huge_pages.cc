#include "core/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

HugePageAdvisor::Span HugePageAdvisor::spanOf(const void* at, size_t bytes) const {
  Span span;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(at);
  const uintptr_t end = begin + bytes;
  const size_t half = regionBytes_ / 2;
  // Not a buffer: empty, under half a region, or past the address space.
  if (at == nullptr || end <= begin || end - begin < half) return span;
  // The regions at least half inside: from the one whose second half
  // begin does not pass to the one whose first half end reaches.
  const uintptr_t first = (begin + half - 1) / regionBytes_;
  const uintptr_t last = (end - half) / regionBytes_;
  // None, or more than the table holds: left alone.
  if (last < first || last - first >= kMaxRegions) return span;
  span.first = first;
  span.count = last - first + 1;
  // Those wholly inside.
  const uintptr_t innerFirst = begin / regionBytes_ + (begin % regionBytes_ != 0 ? 1 : 0);
  const uintptr_t innerEnd = end / regionBytes_;
  span.innerFirst = innerFirst;
  span.innerCount = innerEnd > innerFirst ? innerEnd - innerFirst : 0;
  return span;
}

bool HugePageAdvisor::keptIn(const Span& span) const {
  for (uintptr_t i = 0; i < span.innerCount; ++i) {
    const auto it = regions_.find((span.innerFirst + i) * regionBytes_);
    if (it != regions_.end() && it->second.collapsed) return true;
  }
  return false;
}

void HugePageAdvisor::noteUse(const void* p, size_t bytes, const void* q, size_t qBytes) {
  if (collapseAfter_ == 0 || regionBytes_ == 0) return;
  const Span a = spanOf(p, bytes), b = spanOf(q, qBytes);
  if (a.count == 0 && b.count == 0) return;  // small messages: no lock
  std::lock_guard lock(mutex_);
  size_t asksLeft = kMaxAsksPerCall;
  // Buffers whose regions overlap or touch (in place, or neighbours): their
  // regions counted once.
  if (a.count && b.count && b.first <= a.first + a.count && a.first <= b.first + b.count) {
    const uintptr_t first = std::min(a.first, b.first);
    const uintptr_t end = std::max(a.first + a.count, b.first + b.count);
    noteRegions(first, end - first, keptIn(a) || keptIn(b), asksLeft);
    return;
  }
  if (a.count) noteRegions(a.first, a.count, keptIn(a), asksLeft);
  if (b.count) noteRegions(b.first, b.count, keptIn(b), asksLeft);
}

void HugePageAdvisor::noteRegions(uintptr_t first, uintptr_t count, bool kept, size_t& asksLeft) {
  if (count > kMaxRegions) return;
  if (regions_.size() + count > kMaxRegions) regions_.clear();
  // Regions never asked go first, so that asking again the ones that are
  // huge already cannot keep them waiting past the call's share.
  std::vector<std::pair<uintptr_t, Region*>> again;
  for (uintptr_t i = 0; i < count; ++i) {
    const uintptr_t start = (first + i) * regionBytes_;
    Region& r = regions_[start];
    if (r.uses < UINT32_MAX) ++r.uses;
    if (r.wait == 0 ? (kept || r.uses >= collapseAfter_) : r.uses >= r.wait) {
      if (r.wait != 0) {
        again.emplace_back(start, &r);
      } else if (asksLeft > 0) {
        --asksLeft;
        ask(start, r);
      }
    }
  }
  // Past the call's share, a due region waits for the next call.
  for (const auto& [start, r] : again) {
    if (asksLeft == 0) break;
    --asksLeft;
    ask(start, *r);
  }
}

void HugePageAdvisor::ask(uintptr_t start, Region& region) {
  const uint64_t maxWait = std::min<uint64_t>(uint64_t{collapseAfter_} * kMaxWaitFactor, UINT32_MAX);
  const uint64_t wait = region.wait == 0 ? collapseAfter_ : region.wait;
  region.wait = static_cast<uint32_t>(std::min(wait * 2, maxWait));
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
