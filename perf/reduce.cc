// reduce_perf: hclReduce to each root. busbw = algbw. Non-root receive
// buffers must come back untouched.
#include <cstring>

#include "perf/common/collective.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t, int) { return {count, count, count, 0, 0}; }

void bandwidth(size_t count, size_t typeSize, double sec, int, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * typeSize) / 1.0e9 / sec;
  busBw = algBw;
}

void initData(const InitArgs& a) {
  fillReductionInput(a.input(), a.counts.send, 0, a.type, a.op, a.rank, a.seed);
  if (!a.expected) return;
  if (a.rank == a.root) {
    fillReductionExpected(a.expected, a.counts.recv, 0, a.type, a.op, a.nranks, a.seed);
  } else {
    std::memcpy(a.expected, a.output(), a.counts.recv * a.eltSize);
  }
}

hclResult_t run(const CallArgs& c) {
  return hclReduce(c.send, c.recv, c.count, c.type, c.op, c.root, c.comm, c.stream);
}

constexpr CollectiveTest kTest{
    .name = "Reduce",
    .kind = CollKind::Reduce,
    .reduces = true,
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
