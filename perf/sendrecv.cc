// sendrecv_perf: every rank sends to rank+1 and receives from rank-1 in one
// group. busbw = algbw. As in nccl-tests, the in-place run is not checked,
// and the rows go through the -o operators (which change nothing).
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
  fillPattern(a.input(), a.counts.send, 0, a.type, a.rank, a.seed);
  if (a.expected) fillPattern(a.expected, a.counts.recv, 0, a.type, (a.rank - 1 + a.nranks) % a.nranks, a.seed);
}

hclResult_t run(const CallArgs& c) {
  const int next = (c.rank + 1) % c.nranks;
  const int prev = (c.rank - 1 + c.nranks) % c.nranks;
  hclResult_t r = hclGroupStart();
  if (r != hclSuccess) return r;
  r = hclSend(c.send, c.count, c.type, next, c.comm, c.stream);
  if (r == hclSuccess) r = hclRecv(c.recv, c.count, c.type, prev, c.comm, c.stream);
  const hclResult_t end = hclGroupEnd();
  return r != hclSuccess ? r : end;
}

constexpr CollectiveTest kTest{
    .name = "SendRecv",
    .kind = CollKind::SendRecv,
    .reduces = false,
    .rooted = false,
    .checksInPlace = false,
    .needsPowerOfTwo = false,
    .counts = counts,
    .bandwidth = bandwidth,
    .initData = initData,
    .run = run,
    .listsOps = true,
};

}  // namespace

const CollectiveTest& perfCollective() { return kTest; }

}  // namespace hcl::perf
