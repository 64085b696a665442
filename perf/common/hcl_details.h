// -H: which algorithm a call ran and which transports it used. The algorithm
// is the communicator's own choice (hclCommGetPlan); the peers a rank
// exchanges data with come from that algorithm's schedule for the call (same
// chunk size; hierarchical schedules are rebuilt with the groups that
// hclCommGetPlan reports); the transport of each peer comes from
// hclCommDescribeLinks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/plan/plan.h"
#include "core/status.h"
#include "hcl.h"
#include "perf/common/collective.h"

namespace hcl::perf {

inline constexpr int kTransportKinds = 7;  // local, shm, tcp, ofi, net-plugin, ib, other
const char* transportName(int kind);

// kinds[peer] = transport kind of the link to peer; -1 for the rank itself.
Status describeLinkKinds(hclComm_t comm, int rank, int nranks, std::vector<int>& kinds);

struct CallShape {
  std::string algorithm;
  double modelUs = 0;      // the cost model's estimate (hclPlanInfo_t::estimatedUs)
  std::vector<int> peers;  // ranks this rank sends to or receives from
};

class CallInspector {
 public:
  CallInspector();
  ~CallInspector();
  CallShape shape(hclComm_t comm, const CollectiveTest& coll, int rank, int nranks, size_t count,
                  hclDataType_t type, int op, int root) const;

 private:
  size_t chunkBytes_;
};

// "local,shm" from per-kind flags (non-zero: used somewhere); "none" if none.
std::string transportList(const std::vector<double>& used);

}  // namespace hcl::perf
