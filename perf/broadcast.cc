// broadcast_perf: hclBroadcast from each root. busbw = algbw.
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
  if (a.rank == a.root) fillPattern(a.input(), a.counts.send, 0, a.type, a.root, a.seed);
  if (a.expected) fillPattern(a.expected, a.counts.recv, 0, a.type, a.root, a.seed);
}

hclResult_t run(const CallArgs& c) { return hclBroadcast(c.send, c.recv, c.count, c.type, c.root, c.comm, c.stream); }

constexpr CollectiveTest kTest{
    .name = "Broadcast",
    .kind = CollKind::Broadcast,
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
