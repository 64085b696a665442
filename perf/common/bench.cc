#include "perf/common/bench.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "perf/common/device_info.h"
#include "perf/common/hcl_status.h"
#include "perf/common/host_memory.h"
#include "perf/common/names.h"
#include "perf/common/verify.h"

namespace hcl::perf {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The next size of a sweep (a factor sweep from 0 goes on at 1); 0 when it
// would not grow (a zero step), which ends the sweep.
size_t nextSize(size_t size, const Options& o) {
  const size_t next = o.stepFactor > 1 ? (size ? size * o.stepFactor : 1) : size + o.stepBytes;
  return next > size ? next : 0;
}

uint64_t checkSeed(int rep, int iteration) {
  return (static_cast<uint64_t>(rep) << 16) | static_cast<uint64_t>(iteration);
}

}  // namespace

BenchThread::BenchThread(const RunContext& context, std::span<RankSlot> slots, Reporter* reporter)
    : ctx_(context),
      opt_(context.options),
      slots_(slots),
      reporter_(reporter),
      world_(worldComms(slots)),
      nranks_(slots.front().nranks),
      faultPending_(context.injectFault) {}

ThreadOutcome BenchThread::run() {
  out_.status = runAll();
  if (!out_.status.ok()) ctx_.ranks.abortAll();
  return out_;
}

Status BenchThread::runAll() {
  const CollectiveTest& coll = ctx_.coll;
  std::vector<hclDataType_t> types;
  if (opt_.type == -1) {
    types.assign(allTypes().begin(), allTypes().end());
  } else {
    types.push_back(static_cast<hclDataType_t>(opt_.type));
  }
  std::vector<int> ops{kNoOp};
  if (coll.iteratesOps()) {
    ops.clear();
    for (int op = 0; op < kNumOps; ++op) {
      if (opt_.op == -1 || opt_.op == op) ops.push_back(op);
    }
  }
  std::vector<int> roots{-1};
  if (coll.rooted) {
    roots.clear();
    for (int r = 0; r < nranks_; ++r) {
      if (opt_.root == -1 || opt_.root == r) roots.push_back(r);
    }
    if (opt_.root >= nranks_) roots.push_back(opt_.root);  // HCL reports the bad root
  }
  if (coll.needsPowerOfTwo && (nranks_ & (nranks_ - 1)) != 0) {
    std::printf("nRanks %d is not a power of 2, skipping\n", nranks_);
    return {};
  }
  for (hclDataType_t type : types) {
    for (int op : ops) {
      for (int root : roots) HCL_TRY(timeTest(type, op, root));
    }
  }
  return {};
}

void BenchThread::setSizes(size_t bytes, hclDataType_t type) {
  sizes_.eltSize = typeSize(type);
  sizes_.counts = ctx_.coll.counts(bytes / sizes_.eltSize, sizes_.eltSize, nranks_);
  sizes_.paramBytes = sizes_.counts.param * sizes_.eltSize;
  sizes_.sendBytes = sizes_.counts.send * sizes_.eltSize;
  sizes_.expectedBytes = sizes_.counts.recv * sizes_.eltSize;
}

unsigned char* BenchThread::sendBase(const RankSlot& s) const {
  return s.send.data() + static_cast<size_t>(opt_.unalign) * sizes_.eltSize;
}

unsigned char* BenchThread::recvBase(const RankSlot& s) const {
  return s.recv.data() + static_cast<size_t>(opt_.unalign) * sizes_.eltSize;
}

Status BenchThread::createMulSumOps(hclDataType_t type) {
  for (RankSlot& s : slots_) {
    // The scalar is read at creation (host immediate); the operator must live
    // until the calls that use it have run, so it is kept for the whole test.
    uint64_t scalar = mulSumScalarBits(type, s.rank);
    PERF_HCL(hclRedOpCreatePreMulSum(&s.mulSumOp, &scalar, type, hclScalarHostImmediate, s.comm));
    s.hasMulSumOp = true;
  }
  return {};
}

void BenchThread::destroyMulSumOps() {
  for (RankSlot& s : slots_) {
    if (s.hasMulSumOp) hclRedOpDestroy(s.mulSumOp, s.comm);
    s.hasMulSumOp = false;
  }
}

Status BenchThread::startColl(hclDataType_t type, int op, int root, bool inPlace, int iter) {
  // Each iteration uses another part of the buffers, as nccl-tests does.
  const size_t total = std::max(sizes_.sendBytes, sizes_.expectedBytes);
  const size_t steps = total ? std::max<size_t>(opt_.maxBytes / total, 1) : 1;
  const size_t shift = total * (static_cast<size_t>(iter) % steps);
  const bool group = slots_.size() > 1;
  const int rounds = ctx_.coll.rounds ? ctx_.coll.rounds(slots_.front().nranks) : 1;
  Status first;
  for (int round = 0; round < rounds && first.ok(); ++round) {
    if (group) PERF_HCL(hclGroupStart());
    for (RankSlot& s : slots_) {
      unsigned char* recv = recvBase(s) + shift;
      unsigned char* send = sendBase(s) + shift;
      const size_t rank = static_cast<size_t>(s.rank);
      CallArgs call{};
      call.send = inPlace ? recv + sizes_.counts.sendInplaceOffset * sizes_.eltSize * rank : send;
      call.recv = inPlace ? recv + sizes_.counts.recvInplaceOffset * sizes_.eltSize * rank : recv;
      call.count = sizes_.counts.param;
      call.type = type;
      call.op = op == kMulSum ? s.mulSumOp : (op >= 0 ? static_cast<hclRedOp_t>(op) : hclSum);
      call.root = root;
      call.rank = s.rank;
      call.nranks = s.nranks;
      call.comm = s.comm;
      call.stream = s.stream;
      call.round = round;
      const hclResult_t r = ctx_.coll.run(call);
      if (r != hclSuccess && first.ok()) first = hclCallStatus(r, ctx_.coll.name);
    }
    if (group) {
      const hclResult_t end = hclGroupEnd();
      if (first.ok() && end != hclSuccess) first = hclCallStatus(end, "hclGroupEnd()");
    }
  }
  HCL_TRY(first);
  // Inside an aggregation group (-m > 1) nothing has run yet; the wait comes
  // after the group instead (benchTime).
  if ((opt_.blocking == 1 || opt_.blocking == 2) && opt_.aggIters == 1) {
    HCL_TRY(synchronize());
    if (opt_.blocking == 1) HCL_TRY(world_.barrier());
  }
  return {};
}

Status BenchThread::completeColl() {
  if ((opt_.blocking == 1 || opt_.blocking == 2) && opt_.aggIters == 1) return {};
  return synchronize();
}

Status BenchThread::synchronize() {
  if (opt_.timeout <= 0) {
    for (RankSlot& s : slots_) {
      if (s.stream) PERF_HCL(hclStreamSynchronize(s.stream));
    }
    return {};
  }
  std::vector<bool> done(slots_.size(), false);
  size_t remaining = slots_.size();
  const auto start = Clock::now();
  while (remaining > 0) {
    bool idle = true;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (done[i]) continue;
      RankSlot& s = slots_[i];
      const hclResult_t r = s.stream ? hclStreamQuery(s.stream) : hclSuccess;
      if (r == hclSuccess) {
        done[i] = true;
        --remaining;
        idle = false;
        continue;
      }
      if (r != hclInProgress) return hclCallStatus(r, "hclStreamQuery");
      hclResult_t async = hclSuccess;
      PERF_HCL(hclCommGetAsyncError(s.comm, &async));
      if (async != hclSuccess && async != hclInProgress) return hclCallStatus(async, "hclCommGetAsyncError");
    }
    if (remaining > 0 && secondsSince(start) > opt_.timeout) {
      std::printf("%s: Test timeout (%ds) bench.cc:%d\n", shortHostName().c_str(), opt_.timeout, __LINE__);
      ctx_.ranks.abortAll();
      return internalError("Test timeout");
    }
    if (idle) sched_yield();
  }
  return {};
}

Status BenchThread::initData(hclDataType_t type, int op, int root, uint64_t seed, bool inPlace, bool withExpected) {
  for (RankSlot& s : slots_) {
    unsigned char* recv = recvBase(s);
    std::memset(recv, 0, std::max(sizes_.sendBytes, sizes_.expectedBytes));
    InitArgs a;
    a.type = type;
    a.op = op;
    a.root = root;
    a.seed = seed;
    a.inPlace = inPlace;
    a.rank = s.rank;
    a.nranks = s.nranks;
    a.counts = sizes_.counts;
    a.eltSize = sizes_.eltSize;
    a.send = sendBase(s);
    a.recv = recv;
    a.expected = withExpected ? s.expected.data() : nullptr;
    ctx_.coll.initData(a);
  }
  return {};
}

int64_t BenchThread::countWrong(hclDataType_t type, int op, bool inPlace) {
  int64_t wrong = 0;
  for (RankSlot& s : slots_) {
    unsigned char* result =
        recvBase(s) + (inPlace ? sizes_.counts.recvInplaceOffset * sizes_.eltSize * static_cast<size_t>(s.rank) : 0);
    const size_t count = sizes_.counts.recv;
    if (faultPending_ && s.worldRank == 0 && count > 0) {
      corruptFirstElement(result, type);
      faultPending_ = false;
    }
    wrong += countMismatches(result, s.expected.data(), count, type, ctx_.coll.reduces ? op : kNoOp);
  }
  return wrong;
}

Status BenchThread::reduceTime(double& seconds) {
  switch (opt_.average) {
    case 0: {  // world rank 0's time
      const bool drivesRank0 =
          std::any_of(slots_.begin(), slots_.end(), [](const RankSlot& s) { return s.worldRank == 0; });
      if (!drivesRank0) seconds = 0;
      return world_.reduce(seconds, hclSum);
    }
    case 2: return world_.reduce(seconds, hclMin);
    case 3: return world_.reduce(seconds, hclMax);
    default:
      HCL_TRY(world_.reduce(seconds, hclSum));
      seconds /= ctx_.callers;
      return {};
  }
}

Status BenchThread::benchTime(hclDataType_t type, int op, int root, bool inPlace) {
  if (opt_.check) HCL_TRY(initData(type, op, root, 99, inPlace, false));
  HCL_TRY(startColl(type, op, root, inPlace, 0));
  HCL_TRY(completeColl());
  HCL_TRY(world_.barrier());

  std::vector<double> iterTimes;
  double excluded = 0;  // -z 3 barriers
  const auto start = Clock::now();
  for (int iter = 0; iter < opt_.iters; ++iter) {
    const auto iterStart = Clock::now();
    if (opt_.aggIters > 1) PERF_HCL(hclGroupStart());
    Status s;
    for (int a = 0; a < opt_.aggIters && s.ok(); ++a) s = startColl(type, op, root, inPlace, iter * opt_.aggIters + a);
    if (opt_.aggIters > 1) {
      const hclResult_t end = hclGroupEnd();
      if (s.ok() && end != hclSuccess) s = hclCallStatus(end, "hclGroupEnd()");
    }
    HCL_TRY(s);
    if (opt_.aggIters > 1 && (opt_.blocking == 1 || opt_.blocking == 2)) {
      HCL_TRY(synchronize());
      if (opt_.blocking == 1) HCL_TRY(world_.barrier());
    }
    if (opt_.perIterTiming || opt_.blocking == 3) HCL_TRY(synchronize());
    if (opt_.perIterTiming) iterTimes.push_back(secondsSince(iterStart));
    if (opt_.blocking == 3) {
      const auto barrierStart = Clock::now();
      HCL_TRY(world_.barrier());
      excluded += secondsSince(barrierStart);
    }
  }
  const double launches = static_cast<double>(opt_.iters) * opt_.aggIters;
  const double cpuSeconds = (secondsSince(start) - excluded) / launches;
  HCL_TRY(completeColl());
  double seconds = (secondsSince(start) - excluded) / launches;
  HCL_TRY(reduceTime(seconds));
  double algBw = 0, busBw = 0;
  ctx_.coll.bandwidth(sizes_.counts.param, sizes_.eltSize, seconds, nranks_, algBw, busBw);
  HCL_TRY(world_.barrier());

  const bool checked = opt_.check > 0 && (!inPlace || ctx_.coll.checksInPlace);
  int64_t wrong = 0;
  ++rep_;
  if (checked) {
    for (int c = 0; c < opt_.check; ++c) {
      HCL_TRY(initData(type, op, root, checkSeed(rep_, c), inPlace, true));
      HCL_TRY(startColl(type, op, root, inPlace, 0));
      HCL_TRY(completeColl());
      wrong = countWrong(type, op, inPlace);
      if (wrong) ++out_.errors;
      HCL_TRY(world_.reduce(wrong, hclSum));
      if (wrong) break;
    }
  }

  IterStats stats;
  const int skipped = std::min(opt_.perIterSkip, static_cast<int>(iterTimes.size()));
  if (opt_.perIterTiming) {
    HCL_TRY(world_.maxEach(iterTimes));
    stats = computeIterStats(std::span<const double>(iterTimes).subspan(static_cast<size_t>(skipped)));
  }
  if (reporter_) {
    const double timeUsec = (opt_.reportCputime ? cpuSeconds : seconds) * 1.0e6;
    reporter_->rowHalf(timeUsec, algBw, busBw, checked, wrong, !inPlace);
    if (opt_.perIterTiming) reporter_->rowPerIteration(stats, iterTimes, skipped, !inPlace);
  }
  out_.busBwSum += busBw;
  ++out_.busBwCount;
  return {};
}

Status BenchThread::rowDetails(hclDataType_t type, int op, int root) {
  std::vector<double> used(kTransportKinds, 0.0);
  std::string algorithm;
  double modelUs = 0;
  for (const RankSlot& s : slots_) {
    const CallShape shape = ctx_.inspector->shape(s.comm, ctx_.coll, s.rank, s.nranks, sizes_.counts.param, type, op, root);
    algorithm = shape.algorithm;
    modelUs = shape.modelUs;
    for (int peer : shape.peers) {
      const int kind = s.linkKinds[static_cast<size_t>(peer)];
      if (kind >= 0) used[static_cast<size_t>(kind)] = 1.0;
    }
  }
  HCL_TRY(world_.maxEach(used));
  if (reporter_) reporter_->rowDetails(algorithm, transportList(used), modelUs);
  return {};
}

Status BenchThread::timeTest(hclDataType_t type, int op, int root) {
  const CollectiveTest& coll = ctx_.coll;
  HCL_TRY(world_.barrier());
  if (op == kMulSum) HCL_TRY(createMulSumOps(type));
  Status s = [&]() -> Status {
    // Warm-up over every size, doubling.
    for (size_t size = opt_.minBytes; size <= opt_.maxBytes; size = size ? size * 2 : 1) {
      setSizes(size, type);
      for (int iter = 0; iter < opt_.warmupIters; ++iter) HCL_TRY(startColl(type, op, root, false, iter));
      HCL_TRY(completeColl());
    }
    int cycles = opt_.runCycles;
    do {
      for (size_t size = opt_.minBytes; size <= opt_.maxBytes;) {
        setSizes(size, type);
        if (reporter_) {
          reporter_->rowStart(std::max(sizes_.sendBytes, sizes_.expectedBytes), sizes_.counts.param, typeName(type),
                              coll.iteratesOps() ? opName(op) : "none", coll.rooted ? root : -1);
        }
        HCL_TRY(benchTime(type, op, root, false));
        HCL_TRY(benchTime(type, op, root, true));
        if (ctx_.inspector) HCL_TRY(rowDetails(type, op, root));
        if (reporter_) reporter_->rowEnd();
        size = nextSize(size, opt_);
        if (size == 0) break;
      }
    } while (--cycles != 0);
    return {};
  }();
  destroyMulSumOps();
  out_.peakResidentBytes = std::max(out_.peakResidentBytes, residentBytes());
  return s;
}

}  // namespace hcl::perf
