#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
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
  return HugePageAdvisor(collapseAfter, collapseAfter ? transparentHugePageBytes() : 0, madviseCollapse);
}

void HugePageAdvisor::noteUse(const void* p, size_t bytes) {
  if (collapseAfter_ == 0 || regionBytes_ == 0 || bytes < regionBytes_ / 2) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = begin / regionBytes_ * regionBytes_;
  const uintptr_t end = (begin + bytes + regionBytes_ - 1) / regionBytes_ * regionBytes_;
  std::lock_guard lock(mutex_);
  for (uintptr_t start = first; start < end; start += regionBytes_) {
    if (uses_.size() >= kMaxRegions && !uses_.contains(start)) uses_.clear();
    uint32_t& uses = uses_[start];
    if (uses == kRefused) continue;
    if (++uses % collapseAfter_ == 0) collapseRegion(start, uses);
  }
}

void HugePageAdvisor::collapseRegion(uintptr_t start, uint32_t& uses) {
  const auto began = std::chrono::steady_clock::now();
  const int err = collapse_(reinterpret_cast<void*>(start), regionBytes_);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - began).count();
  if (err == 0) {
    if (stats_.collapsed++ == 0) {
      log::info(log::Alloc, "huge pages: a {} KiB region of a buffer used {} times collapsed in {:.0f} us", regionBytes_ >> 10,
                uses, us);
    }
    log::trace(log::Alloc, "huge pages: region {:#x} (use {}) collapsed in {:.0f} us", start, uses, us);
    return;
  }
  // EINVAL: not private anonymous memory, MADV_NOHUGEPAGE, or a kernel
  // without MADV_COLLAPSE; none of these change by asking again.
  if (err == EINVAL || err == EPERM) {
    uses = kRefused;
    if (stats_.refused++ == 0) {
      log::info(log::Alloc, "huge pages: the kernel will not collapse region {:#x} of a buffer: {}", start,
                std::strerror(err));
    }
    return;
  }
  ++stats_.failed;
  log::trace(log::Alloc, "huge pages: collapsing region {:#x} failed for now: {}", start, std::strerror(err));
}

HugePageAdvisor::Stats HugePageAdvisor::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

size_t HugePageAdvisor::trackedRegions() const {
  std::lock_guard lock(mutex_);
  return uses_.size();
}

}  // namespace hcl
