// Ranks as threads of the test process: a communicator of n ranks from
// hclCommInitAll, and a function run on one thread per rank.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "hcl.h"

namespace hcltest {

inline std::vector<hclComm_t> initAll(int n) {
  std::vector<hclComm_t> comms(static_cast<size_t>(n), nullptr);
  EXPECT_EQ(hclCommInitAll(comms.data(), n, nullptr), hclSuccess) << hclGetLastError(nullptr);
  return comms;
}

inline void destroyAll(std::vector<hclComm_t>& comms) {
  for (hclComm_t c : comms) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// Runs fn(rank) on one thread per rank and returns the per-rank results.
inline std::vector<int> onThreads(int n, const std::function<int(int)>& fn) {
  std::vector<int> rc(static_cast<size_t>(n), -1);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { rc[static_cast<size_t>(r)] = fn(r); });
  }
  return rc;
}

}  // namespace hcltest
