// Statistics of per-iteration times (-I), as nccl-tests computes them.
#pragma once

#include <span>

namespace hcl::perf {

struct IterStats {
  double min = 0, max = 0, avg = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0;
  double cvPercent() const { return avg > 0 ? stdev / avg * 100.0 : 0.0; }
};

// Seconds in, seconds out; an empty span gives zeros.
IterStats computeIterStats(std::span<const double> times);

}  // namespace hcl::perf
