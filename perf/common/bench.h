// One benchmark thread: it drives its -g ranks through every type, operator,
// root and size, times out-of-place and in-place calls, checks the results
// and hands each row to the reporter. Every thread of every process runs the
// same sequence, so their bookkeeping collectives (WorldOps) line up.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "perf/common/collective.h"
#include "perf/common/hcl_details.h"
#include "perf/common/options.h"
#include "perf/common/rank_set.h"
#include "perf/common/report.h"
#include "perf/common/world_ops.h"

namespace hcl::perf {

struct RunContext {
  const Options& options;
  const CollectiveTest& coll;
  RankSet& ranks;
  int callers;                     // benchmark threads in the whole run (processes x -t)
  bool injectFault;                // HCL_PERF_INJECT_FAULT=1 (test only)
  const CallInspector* inspector;  // -H, else nullptr
};

struct ThreadOutcome {
  Status status;
  int64_t errors = 0;  // rows whose check found wrong elements on this thread's ranks
  double busBwSum = 0;
  int busBwCount = 0;
  double peakResidentBytes = 0;
};

class BenchThread {
 public:
  // `reporter` is non-null on the thread that prints (process 0, thread 0).
  BenchThread(const RunContext& context, std::span<RankSlot> slots, Reporter* reporter);
  ThreadOutcome run();

 private:
  struct Sizes {
    CollCounts counts;
    size_t eltSize = 0;
    size_t paramBytes = 0;
    size_t sendBytes = 0;
    size_t expectedBytes = 0;
  };

  Status runAll();
  Status timeTest(hclDataType_t type, int op, int root);
  Status benchTime(hclDataType_t type, int op, int root, bool inPlace);
  Status startColl(hclDataType_t type, int op, int root, bool inPlace, int iter);
  Status completeColl();
  Status synchronize();
  Status initData(hclDataType_t type, int op, int root, uint64_t seed, bool inPlace, bool withExpected);
  int64_t countWrong(hclDataType_t type, int op, bool inPlace);
  Status reduceTime(double& seconds);
  Status rowDetails(hclDataType_t type, int op, int root);
  Status createMulSumOps(hclDataType_t type);
  void destroyMulSumOps();
  void setSizes(size_t bytes, hclDataType_t type);
  unsigned char* sendBase(const RankSlot& s) const;
  unsigned char* recvBase(const RankSlot& s) const;
  Status fail(Status s);

  const RunContext& ctx_;
  const Options& opt_;
  std::span<RankSlot> slots_;
  Reporter* reporter_;
  WorldOps world_;
  Sizes sizes_;
  int nranks_;
  int rep_ = 0;
  bool faultPending_;
  ThreadOutcome out_;
};

}  // namespace hcl::perf
