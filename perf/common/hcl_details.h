// -H: which algorithm a call ran and which transports it used. The algorithm
// and the peers a rank exchanges data with come from the schedule HCL's
// planner builds for that very call (same HCL_ALGO, same chunk size); the
// transport of each peer comes from hclCommDescribeLinks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/plan/plan.h"
#include "core/status.h"
#include "hcl.h"
#include "perf/common/collective.h"

namespace hcl::perf {

inline constexpr int kTransportKinds = 4;  // local, shm, tcp, other
const char* transportName(int kind);

// kinds[peer] = transport kind of the link to peer; -1 for the rank itself.
Status describeLinkKinds(hclComm_t comm, int rank, int nranks, std::vector<int>& kinds);

struct CallShape {
  std::string algorithm;
  std::vector<int> peers;  // ranks this rank sends to or receives from
};

class CallInspector {
 public:
  CallInspector();
  ~CallInspector();
  CallShape shape(const CollectiveTest& coll, int rank, int nranks, size_t count, hclDataType_t type, int op,
                  int root) const;

 private:
  std::unique_ptr<Planner> planner_;
  size_t chunkBytes_;
};

// "local,shm" from per-kind flags (non-zero: used somewhere); "none" if none.
std::string transportList(const std::vector<double>& used);

}  // namespace hcl::perf
