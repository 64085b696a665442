// all_gather_perf: hclAllGather. algbw counts all n slices; busbw = algbw * (n-1)/n.
#include "perf/common/collective.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  const size_t base = alignedSlice(count, eltSize, nranks);
  return {base, base * static_cast<size_t>(nranks), base, base, 0};
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * typeSize * static_cast<size_t>(nranks)) / 1.0e9 / sec;
  busBw = algBw * (nranks - 1) / nranks;
}

void initData(const InitArgs& a) {
  fillPattern(a.input(), a.counts.send, 0, a.type, a.rank, a.seed);
  if (!a.expected) return;
  for (int r = 0; r < a.nranks; ++r) {
    fillPattern(a.expected + a.counts.send * a.eltSize * static_cast<size_t>(r), a.counts.send, 0, a.type, r, a.seed);
  }
}

hclResult_t run(const CallArgs& c) { return hclAllGather(c.send, c.recv, c.count, c.type, c.comm, c.stream); }

constexpr CollectiveTest kTest{
    .name = "AllGather",
    .kind = CollKind::AllGather,
    .reduces = false,
    .rooted = false,
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
