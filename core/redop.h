// User-created reduction operators (hclRedOpCreatePreMulSum) of one communicator.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "collectives/reduce/reduce.h"
#include "core/status.h"

namespace hcl {

class RedOpTable {
 public:
  RedOpTable();
  // Registers a PreMulSum op. For hclScalarHostImmediate the scalar is read
  // now; for hclScalarDevice (a host pointer on the CPU device) it is read
  // each time an operation using it runs.
  Status create(hclDataType_t type, const void* scalar, hclScalarResidence_t residence,
                hclRedOp_t* out);
  Status destroy(hclRedOp_t op);
  bool isValid(int op) const;  // int: any value a caller passed
  // Resolves `op` for data type `type` into a ReduceSpec. Fails if the op
  // was created for another type. A pointer scalar is read now, or, when
  // `deferredScalar` is given, returned there to be read when the operation
  // runs (the op itself may be destroyed before that, as NCCL allows).
  Status resolve(hclRedOp_t op, hclDataType_t type, int nranks, ReduceSpec& out,
                 const void** deferredScalar = nullptr) const;

 private:
  struct Entry {
    hclDataType_t type;
    hclScalarResidence_t residence;
    const void* pointer;
    double valueFloat;
    int64_t valueInt;
    uint64_t valueUint;
  };
  // The index of the entry `op` names on this table; -1 when it names none.
  long indexOf(int op) const;

  // Mixed into every op value, so that an op handed out by another
  // communicator (as NCCL's, a value that differs per communicator) is
  // refused here instead of naming one of this table's.
  const uint32_t salt_;
  mutable std::mutex mutex_;
  std::vector<std::optional<Entry>> entries_;  // op = hclNumOps + (index ^ salt_)
};

// Reads one scalar of `type` at `p` into the three representations.
void readScalar(hclDataType_t type, const void* p, double& f, int64_t& i, uint64_t& u);

}  // namespace hcl
