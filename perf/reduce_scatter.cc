// reduce_scatter_perf: hclReduceScatter. algbw counts all n slices; busbw = algbw * (n-1)/n.
#include "perf/common/collective.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  const size_t base = alignedSlice(count, eltSize, nranks);
  return {base * static_cast<size_t>(nranks), base, base, 0, base};
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * typeSize * static_cast<size_t>(nranks)) / 1.0e9 / sec;
  busBw = algBw * (nranks - 1) / nranks;
}

void initData(const InitArgs& a) {
  fillReductionInput(a.input(), a.counts.send, 0, a.type, a.op, a.rank, a.seed);
  if (a.expected) {
    fillReductionExpected(a.expected, a.counts.recv, a.counts.recv * static_cast<size_t>(a.rank), a.type, a.op,
                          a.nranks, a.seed);
  }
}

hclResult_t run(const CallArgs& c) { return hclReduceScatter(c.send, c.recv, c.count, c.type, c.op, c.comm, c.stream); }

constexpr CollectiveTest kTest{
    .name = "ReduceScatter",
    .kind = CollKind::ReduceScatter,
    .reduces = true,
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
