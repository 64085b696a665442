// gather_perf: hclGather to each root. algbw counts all n slices; busbw =
// algbw * (n-1)/n. Non-root receive buffers must come back untouched.
#include <cstring>

#include "perf/common/collective.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  const size_t base = alignedSlice(count, eltSize, nranks);
  return {base, base * static_cast<size_t>(nranks), base, base, 0};
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * static_cast<size_t>(nranks) * typeSize) / 1.0e9 / sec;
  busBw = algBw * (nranks - 1) / nranks;
}

void initData(const InitArgs& a) {
  fillPattern(a.input(), a.counts.send, 0, a.type, a.rank, a.seed);
  if (!a.expected) return;
  if (a.rank != a.root) {
    std::memcpy(a.expected, a.output(), a.counts.recv * a.eltSize);
    return;
  }
  for (int r = 0; r < a.nranks; ++r) {
    fillPattern(a.expected + a.counts.send * a.eltSize * static_cast<size_t>(r), a.counts.send, 0, a.type, r, a.seed);
  }
}

hclResult_t run(const CallArgs& c) { return hclGather(c.send, c.recv, c.count, c.type, c.root, c.comm, c.stream); }

constexpr CollectiveTest kTest{
    .name = "Gather",
    .kind = CollKind::Gather,
    .reduces = false,
    .rooted = true,
    .checksInPlace = true,
    .needsPowerOfTwo = false,
    .counts = counts,
    .bandwidth = bandwidth,
    .initData = initData,
    .run = run,
};

}  // namespace

const CollectiveTest& perfCollective() { return kTest; }

}  // namespace hcl::perf
