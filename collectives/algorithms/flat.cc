#include "collectives/algorithms/flat.h"

#include <vector>

#include "collectives/algorithms/schedule_start.h"

namespace hcl {

Schedule flatAllReduce(const CollArgs& a) {
  Schedule s = beginSchedule(a, "flat");
  ScheduleBuilder b(s);
  if (reduceAlone(b, a)) return s;
  const int n = a.nranks, r = a.rank;
  const size_t es = dataTypeSize(a.type), as = accumulatorSize(a.type);
  // Vectors travel as loaded by their owner (widened, pre-multiplied by its
  // own scalar), unless loading changes nothing.
  const Form form = a.loadIsIdentity ? Form::Native : Form::Acc;
  const size_t bytes = a.count * (a.loadIsIdentity ? es : as);
  // Scratch: [the running partial (Acc) | rank k's vector at slot k].
  const size_t accBytes = (a.count * as + 63) / 64 * 64;
  const auto input = [&](int k) {
    if (k == r && a.loadIsIdentity) return sendAt(0);
    return scratchAt(accBytes + static_cast<size_t>(k) * bytes);
  };
  s.scratchBytes = accBytes + static_cast<size_t>(n) * bytes;
  if (!a.loadIsIdentity) b.convert(input(r), Form::Acc, sendAt(0), Form::Native, a.count);
  std::vector<uint32_t> recvs, sends;
  for (int i = 1; i < n; ++i) recvs.push_back(b.recv((r + n - i) % n, input((r + n - i) % n), bytes));
  for (int i = 1; i < n; ++i) sends.push_back(b.send((r + i) % n, input(r), bytes));
  b.waitAll(recvs);
  // In place, the result overwrites what the sends read (a transport may read
  // it only when the peer receives).
  if (a.inPlace && a.loadIsIdentity) b.waitAll(sends);
  const BufferRef acc = scratchAt(0);
  if (n == 2) {
    b.reduce(recvAt(0), Form::Native, input(0), form, input(1), form, a.count);
    return s;
  }
  b.reduce(acc, Form::Acc, input(0), form, input(1), form, a.count);
  for (int k = 2; k + 1 < n; ++k) b.reduce(acc, Form::Acc, acc, Form::Acc, input(k), form, a.count);
  b.reduce(recvAt(0), Form::Native, acc, Form::Acc, input(n - 1), form, a.count);
  return s;
}

}  // namespace hcl
