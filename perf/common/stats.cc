#include "perf/common/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hcl::perf {
namespace {

// The smallest sample with at least `percentile`% of the samples at or below it.
size_t percentileIndex(size_t n, size_t percentile) {
  const size_t rank = (n * percentile + 99) / 100;
  return std::min(n - 1, rank == 0 ? 0 : rank - 1);
}

}  // namespace

IterStats computeIterStats(std::span<const double> times) {
  IterStats s;
  if (times.empty()) return s;
  std::vector<double> sorted(times.begin(), times.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.p50 = sorted[n / 2];
  s.p95 = sorted[percentileIndex(n, 95)];
  s.p99 = sorted[percentileIndex(n, 99)];
  double sum = 0;
  for (double t : sorted) sum += t;
  s.avg = sum / static_cast<double>(n);
  double var = 0;
  for (double t : sorted) var += (t - s.avg) * (t - s.avg);
  s.stdev = std::sqrt(var / static_cast<double>(n));
  return s;
}

}  // namespace hcl::perf
