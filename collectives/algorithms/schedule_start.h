// What every algorithm's generator starts with.
#pragma once

#include "collectives/plan/collective.h"
#include "collectives/plan/schedule.h"
#include "collectives/plan/step_pool.h"

namespace hcl {

// An empty schedule, its steps' storage from the args' pool where they have one.
inline Schedule emptySchedule(const CollArgs& a) {
  Schedule s;
  if (a.stepPool) s.steps = a.stepPool->take();
  return s;
}

// An empty schedule of `algorithm`, tagged with the collective.
inline Schedule beginSchedule(const CollArgs& a, const char* algorithm) {
  Schedule s = emptySchedule(a);
  s.tag = static_cast<uint32_t>(a.kind);
  s.algorithm = algorithm;
  const CallBufferBytes bytes = callBufferBytes(a);
  s.sendBytes = bytes.send;
  s.recvBytes = bytes.recv;
  return s;
}

// A reduction on one rank is a copy of the input (converted where the
// operation needs it). True when that was all there was to do.
inline bool reduceAlone(ScheduleBuilder& b, const CollArgs& a) {
  if (a.nranks != 1) return false;
  b.convert(recvAt(0), Form::Native, sendAt(0), Form::Native, a.count);
  return true;
}

}  // namespace hcl
