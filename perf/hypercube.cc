// hypercube_perf: an allgather built from hclSend/hclRecv, exchanging with
// rank ^ mask for mask = 1, 2, 4, ... Power-of-two rank counts only.
// algbw = count * typesize * (n-1) / t; busbw = algbw.
#include "perf/common/collective.h"
#include "perf/common/names.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

CollCounts counts(size_t count, size_t eltSize, int nranks) {
  const size_t base = alignedSlice(count, eltSize, nranks);
  return {base, base * static_cast<size_t>(nranks), base, base, 0};
}

void bandwidth(size_t count, size_t typeSize, double sec, int nranks, double& algBw, double& busBw) {
  algBw = static_cast<double>(count * typeSize * static_cast<size_t>(nranks - 1)) / 1.0e9 / sec;
  busBw = algBw;
}

void initData(const InitArgs& a) {
  fillPattern(a.input(), a.counts.send, 0, a.type, a.rank, a.seed);
  if (!a.expected) return;
  for (int r = 0; r < a.nranks; ++r) {
    fillPattern(a.expected + a.counts.send * a.eltSize * static_cast<size_t>(r), a.counts.send, 0, a.type, r, a.seed);
  }
}

hclResult_t exchange(const void* send, void* recv, size_t count, const CallArgs& c, int peer) {
  hclResult_t r = hclGroupStart();
  if (r != hclSuccess) return r;
  r = hclSend(send, count, c.type, peer, c.comm, c.stream);
  if (r == hclSuccess) r = hclRecv(recv, count, c.type, peer, c.comm, c.stream);
  const hclResult_t end = hclGroupEnd();
  return r != hclSuccess ? r : end;
}

// Round 0 puts the own slice in place; round k exchanges with rank ^ 2^(k-1).
int rounds(int nranks) {
  int n = 1;
  for (int mask = 1; mask < nranks; mask <<= 1) ++n;
  return n;
}

hclResult_t run(const CallArgs& c) {
  const size_t rankBytes = c.count * typeSize(c.type);
  auto* recv = static_cast<unsigned char*>(c.recv);
  if (c.round == 0) {
    // The own slice goes through a send to self, so it is ordered on the
    // stream like the exchanges that read it.
    if (recv + static_cast<size_t>(c.rank) * rankBytes == c.send) return hclSuccess;
    return exchange(c.send, recv + static_cast<size_t>(c.rank) * rankBytes, c.count, c, c.rank);
  }
  const int mask = 1 << (c.round - 1);
  const int s = c.rank & ~(mask - 1);
  const int r = s ^ mask;
  return exchange(recv + static_cast<size_t>(s) * rankBytes, recv + static_cast<size_t>(r) * rankBytes,
                  c.count * static_cast<size_t>(mask), c, c.rank ^ mask);
}

constexpr CollectiveTest kTest{
    .name = "HyperCube",
    .kind = CollKind::SendRecv,
    .reduces = false,
    .rooted = false,
    .checksInPlace = true,
    .needsPowerOfTwo = true,
    .counts = counts,
    .bandwidth = bandwidth,
    .initData = initData,
    .run = run,
    .rounds = rounds,
};

}  // namespace

const CollectiveTest& perfCollective() { return kTest; }

}  // namespace hcl::perf
