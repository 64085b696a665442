#include "collectives/algorithms/recursive_doubling.h"

#include <vector>

#include "collectives/algorithms/schedule_start.h"

namespace hcl {
namespace {

int placeOf(const CollArgs& a, int rank) {
  return a.pairingOrder ? (*a.pairingOrder)[static_cast<size_t>(rank)] : rank;
}

}  // namespace

Schedule recursiveDoublingAllReduce(const CollArgs& a) {
  Schedule s = beginSchedule(a, "rd");
  ScheduleBuilder b(s);
  if (reduceAlone(b, a)) return s;
  const int n = a.nranks;
  // Pairs are made between places in the pairing order, not ranks.
  std::vector<int> rankAt(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) rankAt[static_cast<size_t>(placeOf(a, q))] = q;
  const auto rankOf = [&](int place) { return rankAt[static_cast<size_t>(place)]; };
  const int r = placeOf(a, a.rank);
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  const size_t accBytes = a.count * as;
  // Scratch: the running partial (A) and the partner's partial (B).
  const BufferRef A = scratchAt(0), B = scratchAt(accBytes);
  s.scratchBytes = 2 * accBytes;

  if (r >= p) {  // fold into r - p, then receive the result from it
    b.convert(A, Form::Acc, sendAt(0), Form::Native, a.count);
    b.send(rankOf(r - p), A, accBytes);
    b.wait(b.recv(rankOf(r - p), recvAt(0), a.count * es));
    return s;
  }
  // The running partial: the user's data itself while loading it changes
  // nothing (no convert pass, and the last round writes the result directly).
  BufferRef cur = sendAt(0);
  Form curForm = Form::Native;
  if (r + p < n) {
    b.wait(b.recv(rankOf(r + p), B, accBytes));
    b.reduce(A, Form::Acc, B, Form::Acc, sendAt(0), Form::Native, a.count);
    cur = A;
    curForm = Form::Acc;
  } else if (!a.loadIsIdentity) {
    b.convert(A, Form::Acc, sendAt(0), Form::Native, a.count);
    cur = A;
    curForm = Form::Acc;
  }
  for (int mask = 1; mask < p; mask <<= 1) {
    const int partner = rankOf(r ^ mask);
    const uint32_t rt = b.recv(partner, B, accBytes);
    const uint32_t st = b.send(partner, cur, accBytes);
    b.wait(rt);
    b.wait(st);
    if (mask * 2 == p) {
      b.reduce(recvAt(0), Form::Native, cur, curForm, B, Form::Acc, a.count);
    } else {
      b.reduce(A, Form::Acc, cur, curForm, B, Form::Acc, a.count);
      cur = A;
      curForm = Form::Acc;
    }
  }
  if (r + p < n) b.send(rankOf(r + p), recvAt(0), a.count * es);
  return s;
}

}  // namespace hcl
