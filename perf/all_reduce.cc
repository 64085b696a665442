// all_reduce_perf: hclAllReduce. busbw = algbw * 2(n-1)/n.
#include "perf/common/collective.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t, int) { return {count, count, count, 0, 0}; }

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * typeSize) / 1.0e9 / sec;
  busBw = algBw * (2.0 * (nranks - 1)) / nranks;
}

void initData(const InitArgs& a) {
  fillReductionInput(a.input(), a.counts.send, 0, a.type, a.op, a.rank, a.seed);
  if (a.expected) fillReductionExpected(a.expected, a.counts.recv, 0, a.type, a.op, a.nranks, a.seed);
}

hclResult_t run(const CallArgs& c) { return hclAllReduce(c.send, c.recv, c.count, c.type, c.op, c.comm, c.stream); }

constexpr CollectiveTest kTest{
    .name = "AllReduce",
    .kind = CollKind::AllReduce,
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
