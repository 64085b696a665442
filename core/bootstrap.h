// Bootstrap: unique ids, the root that gathers every rank's blob, and the
// small out-of-band collectives used while a communicator is being built.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "hcl.h"

namespace hcl {

struct UniqueIdContents {
  uint8_t secret[16] = {};
  std::string rootIp;        // numeric
  uint16_t rootPort = 0;
  bool rootStartedByRank0 = false;  // true when fixed by HCL_COMM_ID: rank 0 runs the root
};

void encodeUniqueId(const UniqueIdContents& in, hclUniqueId* out);
Status decodeUniqueId(const hclUniqueId& in, UniqueIdContents& out);

// hclGetUniqueId. With HCL_COMM_ID / NCCL_COMM_ID = host:port the root
// address is that one and the secret is derived from it (HCL_COMM_SECRET, if
// set, is mixed in), so separately launched ranks form the same id; rank 0
// starts the root during init. Otherwise a root is started now, in this
// process, on the first chosen interface, with a random secret.
Status createUniqueId(hclUniqueId* out);

// An id that no rank will join (hclCommInitRankScalable's beyond the
// first): its root stops, if this process runs it.
void releaseUnusedUniqueId(const hclUniqueId& id);

// Out-of-band collectives among the members of a communicator being built.
class Oob {
 public:
  virtual ~Oob() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every member contributes `mine`; `all[r]` receives rank r's contribution.
  virtual Status allgather(const std::vector<uint8_t>& mine,
                           std::vector<std::vector<uint8_t>>& all) = 0;
  // Every member sends toEach[r] to member r; fromEach[r] receives what
  // member r sent this one. Each member receives only its own parts where
  // the implementation routes them (the bootstrap root does); this default
  // carries every part to everyone over allgather.
  virtual Status alltoall(const std::vector<std::vector<uint8_t>>& toEach, std::vector<std::vector<uint8_t>>& fromEach);
  // This rank gives up building the communicator for `why`, a failure of
  // its own (not one the others told it of): on leaving, it tells them, and
  // they fail quoting it instead of saying only that it left.
  virtual void leaveFailed(const Status& /*why*/) {}
  Status barrier() {
    std::vector<std::vector<uint8_t>> all;
    return allgather({}, all);
  }
};

// Joins the bootstrap of `id` as `rank` of `nranks`. Connections that do not
// present the id's secret are dropped and logged by the root; the
// communicator being built is unaffected. Waits honour timeoutMs and abortFlag.
Status connectBootstrap(const hclUniqueId& id, int nranks, int rank, int64_t timeoutMs,
                        const std::atomic<bool>* abortFlag, std::unique_ptr<Oob>& out);

}  // namespace hcl
