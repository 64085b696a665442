// alltoall_perf: hclAlltoAll. algbw counts all n slices; busbw = algbw * (n-1)/n.
// As in nccl-tests, the in-place run is timed but not checked.
#include "perf/common/collective.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  const size_t base = alignedSlice(count, eltSize, nranks);
  return {base * static_cast<size_t>(nranks), base * static_cast<size_t>(nranks), base, 0, 0};
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * static_cast<size_t>(nranks) * typeSize) / 1.0e9 / sec;
  busBw = algBw * (nranks - 1) / nranks;
}

void initData(const InitArgs& a) {
  fillPattern(a.input(), a.counts.send, 0, a.type, a.rank, a.seed);
  if (!a.expected) return;
  const size_t slice = a.counts.param;
  for (int r = 0; r < a.nranks; ++r) {
    // Slice r of the result is what rank r sent to this rank.
    fillPattern(a.expected + slice * a.eltSize * static_cast<size_t>(r), slice, slice * static_cast<size_t>(a.rank),
                a.type, r, a.seed);
  }
}

hclResult_t run(const CallArgs& c) { return hclAlltoAll(c.send, c.recv, c.count, c.type, c.comm, c.stream); }

constexpr CollectiveTest kTest{
    .name = "AlltoAll",
    .kind = CollKind::AlltoAll,
    .reduces = false,
    .rooted = false,
    .checksInPlace = false,
    .needsPowerOfTwo = false,
    .counts = counts,
    .bandwidth = bandwidth,
    .initData = initData,
    .run = run,
};

}  // namespace

const CollectiveTest& perfCollective() { return kTest; }

}  // namespace hcl::perf
