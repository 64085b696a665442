// Common fixture of the shm tests: a fresh communicator identity and a block
// of memory shared with the forked ranks.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "multiprocess.h"
#include "shm_test_util.h"

namespace hcl::test {

constexpr int kMaxTestRanks = 4;

struct SharedState {
  explicit SharedState(int nranks) : barrier(nranks) {}
  ProcessBarrier barrier;
  std::atomic<int> flag{0};
  char describe[kMaxTestRanks][kMaxTestRanks][128] = {};  // [rank][peer]
};

class ShmTest : public ::testing::Test {
 protected:
  void TearDown() override { removeSegments(id_); }

  SharedState& makeShared(int nranks) {
    memory_ = std::make_unique<SharedMemory>(sizeof(SharedState));
    return *std::construct_at(static_cast<SharedState*>(memory_->data()), nranks);
  }

  static void expectAllExitedZero(const std::vector<ChildStatus>& statuses) {
    for (size_t r = 0; r < statuses.size(); ++r) {
      EXPECT_FALSE(statuses[r].timedOut) << "rank " << r << " was killed at the test deadline";
      EXPECT_TRUE(statuses[r].exited && statuses[r].code == 0)
          << "rank " << r << " exited=" << statuses[r].exited << " code=" << statuses[r].code
          << " signal=" << statuses[r].signal;
    }
  }

  CommIdentity id_ = randomIdentity();
  std::unique_ptr<SharedMemory> memory_;
};

}  // namespace hcl::test
