// Every collective, checked on one rank of a running communicator. Each
// function returns 0 on success and prints what differed otherwise.
#pragma once

#include "hcl.h"
#include "test_data.h"

namespace hcltest {

struct CheckConfig {
  std::vector<size_t> counts{0, 1, 7};
  std::vector<size_t> bigCounts{(1u << 20) + 3};
  bool bigForEveryType = false;  // otherwise only float32, int8, bf16 and fp16 get the big counts
  // Buffers from hclCommMemAlloc (the communicator's device memory) instead
  // of host vectors.
  bool deviceMemory = false;
  // Buffers from hclMemAlloc (shareable host memory, which peers on the host
  // map) instead of host vectors.
  bool sharedMemory = false;
};

int checkAllCollectives(hclComm_t comm, const CheckConfig& cfg);
int checkReduction(hclComm_t comm, int kind, TestOp op, hclDataType_t t, size_t count, bool inPlace);

}  // namespace hcltest
