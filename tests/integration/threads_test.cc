// Ranks as threads of one process: hclCommInitAll, one thread driving every
// rank inside a group, split, point-to-point patterns and CPU streams.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collective_checks.h"
#include "hcl.h"
#include "thread_ranks.h"

namespace {

using hcltest::destroyAll;
using hcltest::initAll;
using hcltest::onThreads;

TEST(Threads, InitAllOneThreadPerRankEveryCollective) {
  auto comms = initAll(4);
  hcltest::CheckConfig cfg;
  auto rc = onThreads(4, [&](int r) { return hcltest::checkAllCollectives(comms[static_cast<size_t>(r)], cfg); });
  EXPECT_EQ(rc, std::vector<int>(4, 0));
  destroyAll(comms);
}

// Sends that receives of the same group partly overwrite: each rank sends
// the first half of its buffer to both neighbours while receiving one of
// them into the buffer's middle, and the other into a buffer of its own.
// The sends carry what the buffer held when the group started.
TEST(Threads, SendsPartlyOverwrittenByReceivesOfTheGroup) {
  constexpr int n = 3;
  constexpr size_t kHalf = 100000;
  auto comms = initAll(n);
  auto value = [](int rank, size_t i) { return static_cast<float>(rank * 1000000 + i); };
  auto rc = onThreads(n, [&](int r) -> int {
    hclComm_t comm = comms[static_cast<size_t>(r)];
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<float> buf(2 * kHalf), other(kHalf, -1.0f);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = value(r, i);
    float* middle = buf.data() + kHalf / 2;
    if (hclGroupStart() != hclSuccess) return 1;
    if (hclSend(buf.data(), kHalf, hclFloat, next, comm, nullptr) != hclSuccess) return 2;
    if (hclSend(buf.data(), kHalf, hclFloat, prev, comm, nullptr) != hclSuccess) return 3;
    if (hclRecv(middle, kHalf, hclFloat, next, comm, nullptr) != hclSuccess) return 4;
    if (hclRecv(other.data(), kHalf, hclFloat, prev, comm, nullptr) != hclSuccess) return 5;
    if (hclGroupEnd() != hclSuccess) return 6;
    for (size_t i = 0; i < kHalf; ++i) {
      if (middle[i] != value(next, i) || other[i] != value(prev, i)) {
        std::fprintf(stderr, "rank %d element %zu: %f from %d (want %f), %f from %d (want %f)\n", r, i, middle[i],
                     next, value(next, i), other[i], prev, value(prev, i));
        return 7;
      }
    }
    return 0;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

// Ranks as threads that make mismatched calls both find the mismatch,
// often at the same moment: each must fail, neither may wait on the other.
TEST(Threads, MismatchedCallsFailOnEveryRank) {
  setenv("HCL_TIMEOUT_MS", "10000", 1);
  for (int round = 0; round < 20; ++round) {
    auto comms = initAll(2);
    auto rc = onThreads(2, [&](int r) -> int {
      std::vector<float> data(static_cast<size_t>(64 * (r + 1)), 1.0f);
      const hclResult_t res =
          hclAllReduce(data.data(), data.data(), data.size(), hclFloat, hclSum, comms[static_cast<size_t>(r)], nullptr);
      return res == hclSuccess ? 1 : 0;
    });
    EXPECT_EQ(rc, std::vector<int>(2, 0)) << "round " << round;
    for (hclComm_t c : comms) hclCommDestroy(c);
  }
  unsetenv("HCL_TIMEOUT_MS");
}

// Calls of one shape run again the run their communicator kept from the
// last such call (core/kept_runs.h): each must use its own buffers and
// operation. More shapes than are kept, in turn, so runs are also replaced;
// two sets of buffers, so a call that reached the previous call's buffers
// would be seen there.
TEST(Threads, RepeatedShapesUseEachCallsBuffersAndOperation) {
  const int n = 3;
  auto comms = initAll(n);
  auto rc = onThreads(n, [&](int r) -> int {
    hclComm_t comm = comms[static_cast<size_t>(r)];
    struct Buffers {
      std::vector<float> send = std::vector<float>(8 * 3), recv = std::vector<float>(8 * 3);
    };
    Buffers sets[2];
    constexpr float kUntouched = -7.0f;
    int failures = 0;
    for (int it = 0; it < 40; ++it) {
      Buffers& cur = sets[it % 2];
      Buffers& other = sets[1 - it % 2];
      const auto valueOf = [&](int rank, size_t i) { return static_cast<float>((rank + 1) * (it + 1)) + static_cast<float>(i); };
      for (size_t i = 0; i < cur.send.size(); ++i) cur.send[i] = valueOf(r, i);
      std::fill(cur.recv.begin(), cur.recv.end(), kUntouched);
      std::fill(other.recv.begin(), other.recv.end(), kUntouched);
      std::vector<float> expected(cur.recv.size(), kUntouched);
      hclResult_t res = hclSuccess;
      switch (it % 7) {
        case 0:
        case 1: {  // the same shape with another operation
          const bool max = it % 7 == 1;
          res = hclAllReduce(cur.send.data(), cur.recv.data(), 2, hclFloat, max ? hclMax : hclSum, comm, nullptr);
          for (size_t i = 0; i < 2; ++i) {
            expected[i] = max ? valueOf(n - 1, i) : valueOf(0, i) + valueOf(1, i) + valueOf(2, i);
          }
          break;
        }
        case 2:
        case 3: {  // the same count from another root
          const int root = it % 7 - 2;
          res = hclBroadcast(cur.send.data(), cur.recv.data(), 2, hclFloat, root, comm, nullptr);
          for (size_t i = 0; i < 2; ++i) expected[i] = valueOf(root, i);
          break;
        }
        case 4:
          res = hclReduce(cur.send.data(), cur.recv.data(), 4, hclFloat, hclSum, 2, comm, nullptr);
          if (r == 2) {
            for (size_t i = 0; i < 4; ++i) expected[i] = valueOf(0, i) + valueOf(1, i) + valueOf(2, i);
          }
          break;
        case 5:
          res = hclAllGather(cur.send.data(), cur.recv.data(), 1, hclFloat, comm, nullptr);
          for (int k = 0; k < n; ++k) expected[static_cast<size_t>(k)] = valueOf(k, 0);
          break;
        case 6:  // in place
          std::copy(cur.send.begin(), cur.send.begin() + 2, cur.recv.begin());
          res = hclAllReduce(cur.recv.data(), cur.recv.data(), 2, hclFloat, hclSum, comm, nullptr);
          for (size_t i = 0; i < 2; ++i) expected[i] = valueOf(0, i) + valueOf(1, i) + valueOf(2, i);
          break;
      }
      if (res != hclSuccess) {
        ADD_FAILURE() << "rank " << r << " call " << it << ": " << hclGetLastError(comm);
        return 1;
      }
      if (cur.recv != expected) {
        ADD_FAILURE() << "rank " << r << " call " << it << ": wrong result";
        ++failures;
      }
      if (std::count(other.recv.begin(), other.recv.end(), kUntouched) != static_cast<long>(other.recv.size())) {
        ADD_FAILURE() << "rank " << r << " call " << it << ": wrote into the previous call's buffer";
        ++failures;
      }
    }
    return failures;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

TEST(Threads, OneThreadDrivesAllRanksInAGroup) {
  const int n = 3;
  auto comms = initAll(n);
  const size_t count = 100003;
  std::vector<std::vector<float>> send(n, std::vector<float>(count)), recv(n, std::vector<float>(count));
  std::vector<std::vector<int32_t>> gathered(n, std::vector<int32_t>(n * 5));
  std::vector<std::vector<int32_t>> mine(n, std::vector<int32_t>(5));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) send[r][i] = static_cast<float>(r + 1) * static_cast<float>(i % 5);
    for (int i = 0; i < 5; ++i) mine[r][i] = r * 10 + i;
  }
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(hclAllReduce(send[r].data(), recv[r].data(), count, hclFloat, hclSum, comms[r], nullptr), hclSuccess);
    ASSERT_EQ(hclAllGather(mine[r].data(), gathered[r].data(), 5, hclInt32, comms[r], nullptr), hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[r][i], 6.0f * static_cast<float>(i % 5)) << "rank " << r << " i " << i;
    for (int p = 0; p < n; ++p) {
      for (int i = 0; i < 5; ++i) ASSERT_EQ(gathered[r][p * 5 + i], p * 10 + i);
    }
  }
  destroyAll(comms);
}

TEST(Threads, InitRankInsideAGroupFromOneThread) {
  hclUniqueId id;
  ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
  const int n = 3;
  std::vector<hclComm_t> comms(n);
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (int r = 0; r < n; ++r) ASSERT_EQ(hclCommInitRank(&comms[r], n, id, r), hclSuccess);
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  std::vector<int64_t> v(n);
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (int r = 0; r < n; ++r) {
    v[r] = r + 1;
    ASSERT_EQ(hclAllReduce(&v[r], &v[r], 1, hclInt64, hclProd, comms[r], nullptr), hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess);
  for (int r = 0; r < n; ++r) EXPECT_EQ(v[r], 6);
  destroyAll(comms);
}

TEST(Threads, SplitColorsKeysNoColorAndConcurrentUse) {
  const int n = 6;
  auto comms = initAll(n);
  std::vector<hclComm_t> sub(n, nullptr);
  // Checks a member's place in its part, then runs collectives on it while
  // the other part does the same.
  auto useSubcomm = [&](int r, int color) {
    // Members of each color in descending parent rank (keys are -rank).
    int size = 0, myRank = 0;
    hclCommCount(sub[r], &size);
    hclCommUserRank(sub[r], &myRank);
    const int expectedSize = color == 0 ? 3 : 2;  // {0,2,4} and {1,3}
    const int expectedRank = color == 0 ? (4 - r) / 2 : (3 - r) / 2;
    if (size != expectedSize || myRank != expectedRank) return 3;
    for (int iter = 0; iter < 20; ++iter) {
      int64_t v = r;
      if (hclAllReduce(&v, &v, 1, hclInt64, hclSum, sub[r], nullptr) != hclSuccess) return 4;
      if (v != (color == 0 ? 6 : 4)) return 5;
    }
    return 0;
  };
  auto rc = onThreads(n, [&](int r) {
    const int color = r == 5 ? HCL_SPLIT_NOCOLOR : r % 2;
    if (hclCommSplit(comms[r], color, -r, &sub[r], nullptr) != hclSuccess) return 1;
    if (color == HCL_SPLIT_NOCOLOR) {
      if (sub[r] != nullptr) return 2;
    } else if (int rc = useSubcomm(r, color); rc != 0) {
      return rc;
    }
    // The parent still works after the split, for every rank.
    int32_t one = 1;
    if (hclAllReduce(&one, &one, 1, hclInt32, hclSum, comms[r], nullptr) != hclSuccess || one != n) return 6;
    return 0;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  for (hclComm_t c : sub) {
    if (c) {
      EXPECT_EQ(hclCommDestroy(c), hclSuccess);
    }
  }
  destroyAll(comms);
}

// A launch over several communicators gives each one's turn back as soon
// as its part is done, as each communicator's execution gate is: its next
// operation must not wait for the launch's other parts. Here rank p0's group
// over A and B finishes A at once but waits on B for p2, who is behind D,
// which needs p1's D, queued behind p1's second A, which needs p0's next A.
TEST(Threads, ALaunchOverSeveralCommunicatorsFreesEachWhenItsPartEnds) {
  setenv("HCL_TIMEOUT_MS", "20000", 1);  // the cycle would end in a timeout, not a hang
  auto a = initAll(2);
  auto b = initAll(2);
  auto d = initAll(2);
  unsetenv("HCL_TIMEOUT_MS");
  auto rc = onThreads(3, [&](int p) {
    hclStream_t s1 = nullptr, s2 = nullptr;
    if (hclStreamCreate(&s1) != hclSuccess || hclStreamCreate(&s2) != hclSuccess) return 1;
    int32_t x = 1, y = 1, z = 1;
    auto sum = [](int32_t& v, hclComm_t c, hclStream_t s) { return hclAllReduce(&v, &v, 1, hclInt32, hclSum, c, s); };
    if (p == 0) {
      if (hclGroupStart() != hclSuccess || sum(x, a[0], s1) != hclSuccess || sum(y, b[0], s1) != hclSuccess ||
          hclGroupEnd() != hclSuccess || sum(z, a[0], s2) != hclSuccess)
        return 2;
    } else if (p == 1) {
      if (sum(x, a[1], s1) != hclSuccess || sum(z, a[1], s1) != hclSuccess || sum(y, d[0], s1) != hclSuccess) return 2;
    } else {
      if (sum(y, d[1], s1) != hclSuccess || sum(x, b[1], s1) != hclSuccess) return 2;
    }
    if (hclStreamSynchronize(s1) != hclSuccess || hclStreamSynchronize(s2) != hclSuccess) return 3;
    hclStreamDestroy(s1);
    hclStreamDestroy(s2);
    if (p == 2) return x == 2 && y == 2 ? 0 : 4;
    return x == 2 && y == 2 && z == 2 ? 0 : 4;
  });
  EXPECT_EQ(rc, (std::vector<int>{0, 0, 0})) << hclGetLastError(nullptr);
  destroyAll(a);
  destroyAll(b);
  destroyAll(d);
}

// A call waiting for its turn sleeps until a turn ends; aborting (here
// revoking) its communicator must wake it, even when the operation ahead of
// it has not started: that one is queued behind another communicator's call
// which no peer will ever join, and whose timeout is far away.
TEST(Threads, RevokingACommunicatorWakesACallWaitingForItsTurn) {
  setenv("HCL_TIMEOUT_MS", "600000", 1);
  auto c = initAll(2);
  auto d = initAll(2);
  unsetenv("HCL_TIMEOUT_MS");
  hclStream_t s = nullptr;
  ASSERT_EQ(hclStreamCreate(&s), hclSuccess);
  int32_t stuck = 1, queued = 1, waiting = 1;
  ASSERT_EQ(hclAllReduce(&stuck, &stuck, 1, hclInt32, hclSum, d[0], s), hclSuccess);   // rank 1 never joins
  ASSERT_EQ(hclAllReduce(&queued, &queued, 1, hclInt32, hclSum, c[0], s), hclSuccess);  // behind it
  std::atomic<int> result{-1};
  std::thread caller([&] {
    result = hclAllReduce(&waiting, &waiting, 1, hclInt32, hclSum, c[0], nullptr);  // waits for `queued`
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(result.load(), -1) << "the NULL-stream call did not wait for the one queued before it";
  ASSERT_EQ(hclCommRevoke(c[0], HCL_REVOKE_DEFAULT), hclSuccess);
  // A hang guard, not a timing check: unwoken, the call would wait for d's
  // ten-minute timeout.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (result.load() == -1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (result.load() == -1) {
    std::fprintf(stderr, "FAILED: the revoke did not wake the call waiting for its turn\n");
    std::_Exit(1);
  }
  caller.join();
  EXPECT_NE(result.load(), hclSuccess);
  ASSERT_EQ(hclCommRevoke(d[0], HCL_REVOKE_DEFAULT), hclSuccess);
  EXPECT_NE(hclStreamSynchronize(s), hclSuccess);
  EXPECT_EQ(hclStreamDestroy(s), hclSuccess);
  destroyAll(c);
  destroyAll(d);
}

// A split that fails names the call once, though both the API and the
// exchange over the parent's links name it.
TEST(Threads, AFailedSplitNamesTheCallOnce) {
  auto comms = initAll(2);
  ASSERT_EQ(hclCommAbort(comms[1]), hclSuccess);
  hclComm_t child = nullptr;
  EXPECT_NE(hclCommSplit(comms[0], 0, 0, &child, nullptr), hclSuccess);
  const std::string text = hclGetLastError(nullptr);
  EXPECT_EQ(text.rfind("hclCommSplit: ", 0), 0u) << text;
  EXPECT_EQ(text.find("hclCommSplit: hclCommSplit"), std::string::npos) << text;
  EXPECT_EQ(child, nullptr);
  EXPECT_EQ(hclCommDestroy(comms[0]), hclSuccess);
}

// As in NCCL, splits inside a group run at hclGroupEnd, so one thread can
// split several ranks of a communicator (each split waits for the others).
TEST(Threads, OneThreadSplitsEveryRankInAGroup) {
  auto comms = initAll(3);
  std::vector<hclComm_t> sub(3, nullptr);
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (int r = 0; r < 3; ++r) {
    const int color = r == 1 ? HCL_SPLIT_NOCOLOR : 0;
    ASSERT_EQ(hclCommSplit(comms[static_cast<size_t>(r)], color, -r, &sub[static_cast<size_t>(r)], nullptr),
              hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(sub[1], nullptr);
  int rank0 = -1, rank2 = -1, count = 0;
  ASSERT_EQ(hclCommUserRank(sub[0], &rank0), hclSuccess);
  ASSERT_EQ(hclCommUserRank(sub[2], &rank2), hclSuccess);
  ASSERT_EQ(hclCommCount(sub[0], &count), hclSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(rank0, 1);  // keys -0 and -2: rank 2 first
  EXPECT_EQ(rank2, 0);
  std::vector<int32_t> values = {1, 10};
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  ASSERT_EQ(hclAllReduce(&values[0], &values[0], 1, hclInt32, hclSum, sub[0], nullptr), hclSuccess);
  ASSERT_EQ(hclAllReduce(&values[1], &values[1], 1, hclInt32, hclSum, sub[2], nullptr), hclSuccess);
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(values, (std::vector<int32_t>{11, 11}));
  EXPECT_EQ(hclCommDestroy(sub[0]), hclSuccess);
  EXPECT_EQ(hclCommDestroy(sub[2]), hclSuccess);
  destroyAll(comms);
}

// As NCCL: only the ranks that stay call hclCommShrink; they keep their
// parent order. Here rank 1 leaves; it keeps using nothing and is not asked.
TEST(Threads, ShrinkWithoutTheExcludedRank) {
  auto comms = initAll(4);
  int excluded[] = {1};
  std::vector<hclComm_t> small(4, nullptr);
  auto rc = onThreads(4, [&](int r) {
    if (r == 1) return 0;
    if (hclCommShrink(comms[static_cast<size_t>(r)], excluded, 1, &small[static_cast<size_t>(r)], nullptr,
                      HCL_SHRINK_DEFAULT) !=
        hclSuccess) {
      return 1;
    }
    int rank = -1, count = 0;
    if (hclCommUserRank(small[static_cast<size_t>(r)], &rank) != hclSuccess || rank != (r == 0 ? 0 : r - 1)) return 2;
    if (hclCommCount(small[static_cast<size_t>(r)], &count) != hclSuccess || count != 3) return 3;
    int32_t value = 1 << r;
    if (hclAllReduce(&value, &value, 1, hclInt32, hclSum, small[static_cast<size_t>(r)], nullptr) != hclSuccess) {
      return 4;
    }
    return value == (1 | 4 | 8) ? 0 : 5;
  });
  EXPECT_EQ(rc, (std::vector<int>{0, 0, 0, 0})) << hclGetLastError(nullptr);
  EXPECT_EQ(small[1], nullptr);
  // The parent still works for all four after the shrink.
  std::vector<int32_t> values = {1, 2, 3, 4};
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(hclAllReduce(&values[r], &values[r], 1, hclInt32, hclSum, comms[r], nullptr), hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(values, (std::vector<int32_t>{10, 10, 10, 10}));
  // One thread can shrink several ranks in a group, as with split.
  std::vector<hclComm_t> pair(4, nullptr);
  int twoGone[] = {3, 0};
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r : {1u, 2u}) {
    ASSERT_EQ(hclCommShrink(comms[r], twoGone, 2, &pair[r], nullptr, HCL_SHRINK_DEFAULT), hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  int count = 0;
  ASSERT_EQ(hclCommCount(pair[2], &count), hclSuccess);
  EXPECT_EQ(count, 2);
  for (hclComm_t c : {small[0], small[2], small[3], pair[1], pair[2]}) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
  destroyAll(comms);
}

TEST(Threads, ShrinkArgumentsAreChecked) {
  auto comms = initAll(3);
  hclComm_t out = nullptr;
  auto expectRefused = [&](int* list, int count, int flags, const char* words) {
    EXPECT_EQ(hclCommShrink(comms[0], list, count, &out, nullptr, flags), hclInvalidArgument) << words;
    const std::string text = hclGetLastError(nullptr);
    EXPECT_EQ(text.rfind("hclCommShrink: ", 0), 0u) << text;
    EXPECT_NE(text.find(words), std::string::npos) << "'" << words << "' not in: " << text;
    EXPECT_EQ(out, nullptr);
  };
  int one[] = {1}, self[] = {2, 0}, twice[] = {1, 1}, far[] = {3}, all[] = {1, 2, 0};
  expectRefused(one, -1, HCL_SHRINK_DEFAULT, "excludeRanksCount -1");
  expectRefused(all, 3, HCL_SHRINK_DEFAULT, "excludeRanksCount 3 must be from 1 to 2");
  // As NCCL, a shrink excludes someone: a list is needed even with count 0.
  expectRefused(one, 0, HCL_SHRINK_DEFAULT, "excludeRanksCount 0 must be from 1 to 2");
  expectRefused(nullptr, 0, HCL_SHRINK_DEFAULT, "excludeRanksList is NULL");
  expectRefused(nullptr, 1, HCL_SHRINK_DEFAULT, "excludeRanksList is NULL");
  expectRefused(far, 1, HCL_SHRINK_DEFAULT, "excludeRanksList[0] = 3 is out of range");
  expectRefused(self, 2, HCL_SHRINK_DEFAULT, "excludeRanksList[1] = 0 is the calling rank");
  expectRefused(twice, 2, HCL_SHRINK_DEFAULT, "excludeRanksList[1] = 1 is listed twice");
  expectRefused(one, 1, 7, "shrinkFlags 0x7");
  EXPECT_EQ(hclCommShrink(comms[0], one, 1, nullptr, nullptr, HCL_SHRINK_DEFAULT), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("newcomm is NULL"), std::string::npos);
  destroyAll(comms);
}

// hclCommRevoke stops a call in flight on another thread without freeing
// anything; afterwards new calls and finalize are refused, and the ranks
// can still split or shrink the communicator (both through the rescue
// root, since the revoke broke its links) or destroy it.
TEST(Threads, RevokeStopsWorkAndLeavesSplitAndShrink) {
  auto comms = initAll(3);
  // Rank 0 waits in an allreduce that ranks 1 and 2 never join.
  int32_t stuck = 1;
  std::atomic<int> stuckResult{-1};
  std::jthread waiter([&] { stuckResult = hclAllReduce(&stuck, &stuck, 1, hclInt32, hclSum, comms[0], nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto before = std::chrono::steady_clock::now();
  auto rc = onThreads(3, [&](int r) { return static_cast<int>(hclCommRevoke(comms[static_cast<size_t>(r)], HCL_REVOKE_DEFAULT)); });
  waiter.join();
  EXPECT_EQ(rc, (std::vector<int>{0, 0, 0})) << hclGetLastError(nullptr);
  EXPECT_NE(stuckResult.load(), hclSuccess);
  EXPECT_NE(stuckResult.load(), -1);
  // Well within the 60 s the call would otherwise wait for its peers.
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(30));
  EXPECT_EQ(hclCommRevoke(comms[1], HCL_REVOKE_DEFAULT), hclSuccess) << "a second revoke changes nothing";

  int32_t v = 1;
  EXPECT_EQ(hclAllReduce(&v, &v, 1, hclInt32, hclSum, comms[1], nullptr), hclInvalidUsage);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("revoked"), std::string::npos) << hclGetLastError(nullptr);
  EXPECT_EQ(hclSend(&v, 1, hclInt32, 0, comms[1], nullptr), hclInvalidUsage);
  EXPECT_EQ(hclCommFinalize(comms[2]), hclInvalidUsage);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("hclCommDestroy"), std::string::npos);

  // Split: ranks 0 and 2 together, rank 1 alone; then a shrink without rank 1.
  std::vector<hclComm_t> halves(3, nullptr), shrunk(3, nullptr);
  int gone[] = {1};
  rc = onThreads(3, [&](int r) {
    const size_t i = static_cast<size_t>(r);
    if (hclCommSplit(comms[i], r == 1 ? 1 : 0, -r, &halves[i], nullptr) != hclSuccess) return 1;
    int count = 0, rank = -1;
    if (hclCommCount(halves[i], &count) != hclSuccess || count != (r == 1 ? 1 : 2)) return 2;
    // Keys -r put rank 2 first.
    if (hclCommUserRank(halves[i], &rank) != hclSuccess || rank != (r == 2 ? 0 : r == 0 ? 1 : 0)) return 3;
    int32_t x = 1 << r;
    if (hclAllReduce(&x, &x, 1, hclInt32, hclSum, halves[i], nullptr) != hclSuccess) return 4;
    if (x != (r == 1 ? 2 : 5)) return 5;
    if (r == 1) return 0;
    if (hclCommShrink(comms[i], gone, 1, &shrunk[i], nullptr, HCL_SHRINK_DEFAULT) != hclSuccess) return 6;
    int32_t y = 10 + r;
    if (hclAllReduce(&y, &y, 1, hclInt32, hclSum, shrunk[i], nullptr) != hclSuccess) return 7;
    return y == 22 ? 0 : 8;
  });
  EXPECT_EQ(rc, (std::vector<int>{0, 0, 0})) << hclGetLastError(nullptr);
  for (hclComm_t c : halves) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
  for (hclComm_t c : {shrunk[0], shrunk[2]}) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
  destroyAll(comms);
}

TEST(Threads, RevokeArgumentsAreChecked) {
  auto comms = initAll(2);
  EXPECT_EQ(hclCommRevoke(nullptr, HCL_REVOKE_DEFAULT), hclInvalidArgument);
  EXPECT_EQ(std::string(hclGetLastError(nullptr)).rfind("hclCommRevoke: comm is NULL", 0), 0u) << hclGetLastError(nullptr);
  EXPECT_EQ(hclCommRevoke(comms[0], 4), hclInvalidArgument);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("hclCommRevoke: revokeFlags 0x4"), std::string::npos)
      << hclGetLastError(nullptr);
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  EXPECT_EQ(hclCommRevoke(comms[0], HCL_REVOKE_DEFAULT), hclInvalidUsage);
  EXPECT_NE(std::string(hclGetLastError(nullptr)).find("inside a group"), std::string::npos);
  ASSERT_EQ(hclGroupEnd(), hclSuccess);
  // Not revoked by the refused calls: both ranks still run collectives.
  std::vector<int32_t> values = {1, 2};
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < 2; ++r) ASSERT_EQ(hclAllReduce(&values[r], &values[r], 1, hclInt32, hclSum, comms[r], nullptr), hclSuccess);
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(values, (std::vector<int32_t>{3, 3}));
  destroyAll(comms);
}

// Creations from one parent in one group run in call order, one after the
// other: their exchanges share the parent's links.
TEST(Threads, SeveralCreationsFromOneParentInOneGroup) {
  auto comms = initAll(4);
  std::vector<hclComm_t> pairs(4, nullptr), whole(4, nullptr), three(4, nullptr);
  int gone[] = {0};
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(hclCommSplit(comms[r], static_cast<int>(r % 2), 0, &pairs[r], nullptr), hclSuccess);
    ASSERT_EQ(hclCommSplit(comms[r], 0, -static_cast<int>(r), &whole[r], nullptr), hclSuccess);
    if (r != 0) {
      ASSERT_EQ(hclCommShrink(comms[r], gone, 1, &three[r], nullptr, HCL_SHRINK_DEFAULT), hclSuccess);
    }
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  std::vector<int32_t> p(4), w(4), t(4);
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < 4; ++r) {
    p[r] = w[r] = t[r] = static_cast<int32_t>(1 << r);
    ASSERT_EQ(hclAllReduce(&p[r], &p[r], 1, hclInt32, hclSum, pairs[r], nullptr), hclSuccess);
    ASSERT_EQ(hclAllReduce(&w[r], &w[r], 1, hclInt32, hclSum, whole[r], nullptr), hclSuccess);
    if (r != 0) {
      ASSERT_EQ(hclAllReduce(&t[r], &t[r], 1, hclInt32, hclSum, three[r], nullptr), hclSuccess);
    }
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(p, (std::vector<int32_t>{5, 10, 5, 10}));
  EXPECT_EQ(w, (std::vector<int32_t>{15, 15, 15, 15}));
  EXPECT_EQ(t, (std::vector<int32_t>{1, 14, 14, 14}));
  int rank = -1;
  ASSERT_EQ(hclCommUserRank(whole[3], &rank), hclSuccess);
  EXPECT_EQ(rank, 0) << "keys order the split";
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(hclCommDestroy(pairs[r]), hclSuccess);
    EXPECT_EQ(hclCommDestroy(whole[r]), hclSuccess);
    if (r != 0) {
      EXPECT_EQ(hclCommDestroy(three[r]), hclSuccess);
    }
  }
  destroyAll(comms);
}

TEST(Threads, GroupedSendRecvPatterns) {
  const int n = 4;
  auto comms = initAll(n);
  auto rc = onThreads(n, [&](int r) {
    hclComm_t c = comms[r];
    // All-to-all through sends and receives, every send posted first.
    std::vector<int32_t> out(n), in(n, -1);
    for (int p = 0; p < n; ++p) out[p] = r * 100 + p;
    hclGroupStart();
    for (int p = 0; p < n; ++p) hclSend(&out[p], 1, hclInt32, p, c, nullptr);
    for (int p = 0; p < n; ++p) hclRecv(&in[p], 1, hclInt32, p, c, nullptr);
    if (hclGroupEnd() != hclSuccess) return 1;
    for (int p = 0; p < n; ++p) {
      if (in[p] != p * 100 + r) return 2;
    }
    // Pairs that both send first, with a large message.
    const int partner = r ^ 1;
    std::vector<double> big(1 << 18, r), got(1 << 18, -1);
    hclGroupStart();
    hclSend(big.data(), big.size(), hclDouble, partner, c, nullptr);
    hclRecv(got.data(), got.size(), hclDouble, partner, c, nullptr);
    if (hclGroupEnd() != hclSuccess) return 3;
    for (double x : got) {
      if (x != partner) return 4;
    }
    // Several messages to one peer keep their order.
    std::vector<int16_t> a(3), b(3);
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    int16_t s0 = static_cast<int16_t>(r), s1 = static_cast<int16_t>(r + 10), s2 = static_cast<int16_t>(r + 20);
    hclGroupStart();
    hclSend(&s0, 1, hclFloat16, next, c, nullptr);
    hclSend(&s1, 1, hclFloat16, next, c, nullptr);
    hclSend(&s2, 1, hclFloat16, next, c, nullptr);
    for (int k = 0; k < 3; ++k) hclRecv(&a[k], 1, hclFloat16, prev, c, nullptr);
    if (hclGroupEnd() != hclSuccess) return 5;
    if (a[0] != prev || a[1] != prev + 10 || a[2] != prev + 20) return 6;
    return 0;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

TEST(Threads, CpuStreamRunsInOrderAsynchronously) {
  const int n = 2;
  auto comms = initAll(n);
  auto rc = onThreads(n, [&](int r) {
    hclStream_t stream = nullptr;
    if (hclStreamCreate(&stream) != hclSuccess) return 1;
    std::vector<float> buf(1 << 16, 1.0f);
    // Three in-place allreduces queued back to back: each must see the
    // previous one's result, so the final value is n^3.
    for (int k = 0; k < 3; ++k) {
      if (hclAllReduce(buf.data(), buf.data(), buf.size(), hclFloat, hclSum, comms[r], stream) != hclSuccess) return 2;
    }
    if (hclStreamSynchronize(stream) != hclSuccess) return 3;
    if (hclStreamQuery(stream) != hclSuccess) return 4;
    for (float x : buf) {
      if (x != 8.0f) return 5;
    }
    if (hclStreamDestroy(stream) != hclSuccess) return 6;
    return 0;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

// As a device runtime's stream, an HCL stream takes 1024 launches (hcl.h)
// before the caller waits: rank 0 issues more, alone, and its calls stop
// there until rank 1 joins; then everything runs.
TEST(Threads, AStreamHoldsAThousandLaunchesBeforeTheCallerWaits) {
  constexpr int kHeld = 1024, kIssued = kHeld + 40;
  auto comms = initAll(2);
  hclStream_t streams[2] = {nullptr, nullptr};
  for (hclStream_t& s : streams) ASSERT_EQ(hclStreamCreate(&s), hclSuccess);
  const float one = 1.0f;
  float sums[2] = {0, 0};
  std::atomic<int> issued[2] = {0, 0};
  auto issue = [&](int r) {
    for (int i = 0; i < kIssued; ++i) {
      if (hclAllReduce(&one, &sums[r], 1, hclFloat, hclSum, comms[static_cast<size_t>(r)], streams[r]) != hclSuccess)
        return;
      issued[r].fetch_add(1);
    }
  };
  std::thread rank0(issue, 0);
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (issued[0].load() < kHeld && std::chrono::steady_clock::now() < giveUp) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // time to run past the bound, were there none
  EXPECT_EQ(issued[0].load(), kHeld) << "rank 0's first call waits for rank 1, so the stream holds the rest";
  std::thread rank1(issue, 1);
  rank0.join();
  rank1.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(issued[r].load(), kIssued);
    EXPECT_EQ(hclStreamSynchronize(streams[r]), hclSuccess) << hclGetLastError(nullptr);
    EXPECT_EQ(sums[r], 2.0f);
    EXPECT_EQ(hclStreamDestroy(streams[r]), hclSuccess);
  }
  destroyAll(comms);
}

// Two threads end groups over the same two streams, naming them in opposite
// orders, each on a communicator of its own. Their launches must not
// interleave into a cycle (each stream's next job waiting for a job queued
// behind the other's): every group runs, and both streams drain.
TEST(Threads, GroupsOverSharedStreamsFromTwoThreads) {
  constexpr int kGroups = 3000;
  constexpr size_t kCount = 64;
  hclComm_t solo[2] = {nullptr, nullptr};
  for (hclComm_t& c : solo) ASSERT_EQ(hclCommInitAll(&c, 1, nullptr), hclSuccess) << hclGetLastError(nullptr);
  hclStream_t streams[2] = {nullptr, nullptr};
  for (hclStream_t& s : streams) ASSERT_EQ(hclStreamCreate(&s), hclSuccess);
  std::vector<std::vector<float>> data(4, std::vector<float>(kCount, 1.0f));
  auto rc = onThreads(2, [&](int t) {
    hclStream_t first = streams[t], second = streams[1 - t];
    for (int g = 0; g < kGroups; ++g) {
      if (hclGroupStart() != hclSuccess) return 1;
      float* x = data[static_cast<size_t>(2 * t)].data();
      float* y = data[static_cast<size_t>(2 * t + 1)].data();
      if (hclAllReduce(x, x, kCount, hclFloat, hclSum, solo[t], first) != hclSuccess) return 2;
      if (hclAllReduce(y, y, kCount, hclFloat, hclSum, solo[t], second) != hclSuccess) return 3;
      if (hclGroupEnd() != hclSuccess) return 4;
    }
    return 0;
  });
  EXPECT_EQ(rc, (std::vector<int>{0, 0})) << hclGetLastError(nullptr);
  // A hang guard, not a timing check: a cycle would never drain.
  std::atomic<int> drained{0};
  std::thread syncer([&] {
    for (hclStream_t s : streams) drained += hclStreamSynchronize(s) == hclSuccess ? 1 : 100;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (drained.load() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (drained.load() < 2) {
    std::fprintf(stderr, "FAILED: the two streams did not drain within 60 s: the groups' launches formed a cycle\n");
    std::_Exit(1);  // the stream workers are stuck; nothing would join them
  }
  syncer.join();
  EXPECT_EQ(drained.load(), 2);
  for (hclStream_t s : streams) EXPECT_EQ(hclStreamDestroy(s), hclSuccess);
  for (hclComm_t c : solo) EXPECT_EQ(hclCommDestroy(c), hclSuccess);
}

// A communicator's operations run in the order each rank issued them, as
// NCCL's do, whichever stream (or none) they were issued on. Rank 0's
// allreduce on C waits on its stream behind an operation on another
// communicator D that rank 1 issues only later; the call after it on C (on
// the NULL stream, on another stream, or a split) must still run after it on
// both ranks. Run out of order, the ranks' C calls mismatch (both fail) or,
// where both ranks reorder alike, the second call reads the first's output
// before it is written.
TEST(Threads, ACommunicatorsOperationsRunInIssueOrderAcrossStreams) {
  enum class Later { NullStream, OtherStream, Split };
  for (const Later later : {Later::NullStream, Later::OtherStream, Later::Split}) {
    SCOPED_TRACE(later == Later::NullStream ? "NULL stream" : later == Later::OtherStream ? "other stream" : "split");
    auto c = initAll(2);
    auto d = initAll(2);
    auto rc = onThreads(2, [&](int r) {
      hclStream_t s[3] = {nullptr, nullptr, nullptr};
      for (hclStream_t& x : s) {
        if (hclStreamCreate(&x) != hclSuccess) return 1;
      }
      int32_t blocker = 1, mine = r + 1, sum = 0, twice = 0;
      if (r == 0) {
        if (hclAllReduce(&blocker, &blocker, 1, hclInt32, hclSum, d[0], s[0]) != hclSuccess) return 2;
        if (hclAllReduce(&mine, &sum, 1, hclInt32, hclSum, c[0], s[0]) != hclSuccess) return 3;
      } else {
        if (hclAllReduce(&mine, &sum, 1, hclInt32, hclSum, c[1], s[0]) != hclSuccess) return 3;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        if (hclAllReduce(&blocker, &blocker, 1, hclInt32, hclSum, d[1], s[1]) != hclSuccess) return 2;
      }
      hclComm_t child = nullptr;
      switch (later) {
        case Later::NullStream:
          if (hclAllReduce(&sum, &twice, 1, hclInt32, hclSum, c[static_cast<size_t>(r)], nullptr) != hclSuccess)
            return 4;
          break;
        case Later::OtherStream:
          if (hclAllReduce(&sum, &twice, 1, hclInt32, hclSum, c[static_cast<size_t>(r)], s[2]) != hclSuccess) return 4;
          break;
        case Later::Split:
          if (hclCommSplit(c[static_cast<size_t>(r)], 0, r, &child, nullptr) != hclSuccess) return 4;
          if (hclAllReduce(&sum, &twice, 1, hclInt32, hclSum, child, nullptr) != hclSuccess) return 5;
          if (hclCommDestroy(child) != hclSuccess) return 6;
          break;
      }
      for (hclStream_t x : s) {
        if (hclStreamSynchronize(x) != hclSuccess) return 7;
        if (hclStreamDestroy(x) != hclSuccess) return 8;
      }
      if (sum != 3) return 9;
      if (twice != 6) return 10;
      return blocker == 2 ? 0 : 11;
    });
    EXPECT_EQ(rc, (std::vector<int>{0, 0})) << hclGetLastError(nullptr);
    destroyAll(c);
    destroyAll(d);
  }
}

// A group over two streams that fails reports the failure on both streams,
// not only on the one whose worker ran it.
TEST(Threads, FailedGroupOverTwoStreamsFailsBoth) {
  auto comms = initAll(2);
  hclStream_t streams[2] = {nullptr, nullptr};
  for (hclStream_t& s : streams) ASSERT_EQ(hclStreamCreate(&s), hclSuccess);
  int32_t x = 1, y = 2;
  // Rank 1 never joins; the revoke below stops rank 0's group.
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  ASSERT_EQ(hclAllReduce(&x, &x, 1, hclInt32, hclSum, comms[0], streams[0]), hclSuccess);
  ASSERT_EQ(hclAllReduce(&y, &y, 1, hclInt32, hclSum, comms[0], streams[1]), hclSuccess);
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (hclComm_t c : comms) EXPECT_EQ(hclCommRevoke(c, HCL_REVOKE_DEFAULT), hclSuccess);
  EXPECT_NE(hclStreamSynchronize(streams[0]), hclSuccess);
  EXPECT_NE(hclStreamSynchronize(streams[1]), hclSuccess) << "the second stream of the failed group reported success";
  for (hclStream_t s : streams) EXPECT_EQ(hclStreamDestroy(s), hclSuccess);
  destroyAll(comms);
}

// A group with an operation on the NULL stream runs at once, after the work
// already queued on its other streams. An earlier failure on one of those
// streams is that stream's to report, at hclStreamSynchronize: it neither
// stops the group nor is taken by hclGroupEnd.
TEST(Threads, BlockingGroupLeavesAStreamsEarlierErrorOnTheStream) {
  auto pair = initAll(2);
  hclComm_t solo = nullptr;
  ASSERT_EQ(hclCommInitAll(&solo, 1, nullptr), hclSuccess) << hclGetLastError(nullptr);
  hclStream_t stream = nullptr;
  ASSERT_EQ(hclStreamCreate(&stream), hclSuccess);
  // Fails on the stream: rank 1 never joins, and the revoke stops it.
  int32_t stuck = 1;
  ASSERT_EQ(hclAllReduce(&stuck, &stuck, 1, hclInt32, hclSum, pair[0], stream), hclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (hclComm_t c : pair) EXPECT_EQ(hclCommRevoke(c, HCL_REVOKE_DEFAULT), hclSuccess);
  hclResult_t queried = hclInProgress;
  for (int i = 0; i < 6000 && queried == hclInProgress; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    queried = hclStreamQuery(stream);
  }
  ASSERT_NE(queried, hclSuccess);
  ASSERT_NE(queried, hclInProgress);

  const int32_t a = 3, b = 4;
  int32_t sumOut = 0, maxOut = 0;
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  ASSERT_EQ(hclAllReduce(&a, &sumOut, 1, hclInt32, hclSum, solo, nullptr), hclSuccess);
  ASSERT_EQ(hclAllReduce(&b, &maxOut, 1, hclInt32, hclMax, solo, stream), hclSuccess);
  EXPECT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  EXPECT_EQ(sumOut, 3);
  EXPECT_EQ(maxOut, 4);
  EXPECT_EQ(hclStreamSynchronize(stream), queried) << "the stream's earlier error was lost";
  EXPECT_EQ(hclStreamSynchronize(stream), hclSuccess);
  EXPECT_EQ(hclStreamDestroy(stream), hclSuccess);
  EXPECT_EQ(hclCommDestroy(solo), hclSuccess);
  destroyAll(pair);
}

// The usual watchdog pattern: one thread aborts a communicator whose
// operation blocks another, which destroys the handle as soon as its call
// returns, possibly while the abort still runs. Exactly one of them frees it
// (run under the sanitizers, a second free or a use after it is reported).
TEST(Threads, AbortFromAWatchdogWhileTheBlockedThreadDestroys) {
  for (int round = 0; round < 20; ++round) {
    auto comms = initAll(2);
    std::atomic<int> callResult{-1}, destroyResult{-1};
    std::jthread blocked([&] {
      int32_t v = 1;  // rank 1 never joins
      callResult = hclAllReduce(&v, &v, 1, hclInt32, hclSum, comms[0], nullptr);
      destroyResult = hclCommDestroy(comms[0]);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const hclResult_t aborted = hclCommAbort(comms[0]);
    blocked.join();
    EXPECT_NE(callResult.load(), hclSuccess);
    // Whichever came second found the handle gone or already taken.
    EXPECT_TRUE(aborted == hclSuccess || aborted == hclInvalidArgument) << aborted;
    EXPECT_TRUE(destroyResult.load() == hclSuccess || destroyResult.load() == hclInvalidArgument)
        << destroyResult.load();
    EXPECT_EQ(hclCommDestroy(comms[1]), hclSuccess);
  }
}

// After enough calls a thread owns its communicator's execution gate
// (core/execution_gate.h) and its calls take no reference to the
// communicator. One of them blocked (rank 1 stops calling) must still end
// before the communicator goes, whether another thread aborts the handle or
// destroys it (against NCCL's rules, but it must not be a use after free:
// ASan reports one). A destroy waits for the call, which fails by timeout.
void blockTheGatesOwnerThenEndTheHandle(hclResult_t (*endHandle)(hclComm_t)) {
  constexpr int kWarmCalls = 3 * 8;  // well past ExecutionGate::kRebiasAfter
  setenv("HCL_TIMEOUT_MS", "300", 1);
  auto comms = initAll(2);
  unsetenv("HCL_TIMEOUT_MS");
  std::atomic<int> warmFailures{0}, callResult{-1};
  auto warm = [&](hclComm_t comm) {
    for (int i = 0; i < kWarmCalls; ++i) {
      int32_t v = 1;
      if (hclAllReduce(&v, &v, 1, hclInt32, hclSum, comm, nullptr) != hclSuccess || v != 2) ++warmFailures;
    }
  };
  std::jthread peer([&] { warm(comms[1]); });
  std::jthread blocked([&] {
    warm(comms[0]);
    int32_t v = 1;
    callResult = hclAllReduce(&v, &v, 1, hclInt32, hclSum, comms[0], nullptr);
  });
  peer.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(endHandle(comms[0]), hclSuccess);
  blocked.join();
  EXPECT_EQ(warmFailures.load(), 0);
  EXPECT_NE(callResult.load(), hclSuccess);
  EXPECT_EQ(hclCommDestroy(comms[1]), hclSuccess);
}

TEST(Threads, AbortFromAnotherThreadWhileTheGatesOwnerIsBlocked) {
  for (int round = 0; round < 5; ++round) blockTheGatesOwnerThenEndTheHandle(hclCommAbort);
}

TEST(Threads, DestroyFromAnotherThreadWhileTheGatesOwnerIsBlocked) {
  for (int round = 0; round < 3; ++round) blockTheGatesOwnerThenEndTheHandle(hclCommDestroy);
}

// Descriptors open now, with where each points.
std::map<int, std::string> openDescriptors() {
  std::map<int, std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(entry.path(), ec);
    out[std::stoi(entry.path().filename().string())] = ec ? "?" : target.string();
  }
  return out;
}

// Every descriptor HCL opens (bootstrap and transport sockets, shared
// memory, event and pid descriptors) is close-on-exec: a child that another
// thread starts with fork and exec must not keep a link open after this
// process dies, or its peers would wait for their timeout instead of seeing
// the link close.
TEST(Threads, EveryDescriptorHclOpensIsCloseOnExec) {
  for (const bool tcp : {false, true}) {
    SCOPED_TRACE(tcp ? "tcp" : "shm");
    const auto before = openDescriptors();
    if (tcp) setenv("HCL_SHM_DISABLE", "1", 1);
    // Through a unique id, so the ranks meet at a bootstrap root; the
    // allreduce below runs while the bootstrap links are still open.
    hclUniqueId id;
    ASSERT_EQ(hclGetUniqueId(&id), hclSuccess);
    std::vector<hclComm_t> comms(3, nullptr);
    auto rc = onThreads(3, [&](int r) {
      return hclCommInitRank(&comms[static_cast<size_t>(r)], 3, id, r) == hclSuccess ? 0 : 1;
    });
    unsetenv("HCL_SHM_DISABLE");
    ASSERT_EQ(rc, std::vector<int>(3, 0));
    // A root waiting for ranks, and a rank of it waiting for the others
    // (nonblocking), with its bootstrap socket open.
    hclUniqueId waiting;
    ASSERT_EQ(hclGetUniqueId(&waiting), hclSuccess);
    hclConfig_t config = HCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    hclComm_t lonely = nullptr;
    std::set<std::string> socketsBefore;  // by inode: descriptor numbers are reused
    for (const auto& [fd, target] : openDescriptors()) socketsBefore.insert(target);
    ASSERT_EQ(hclCommInitRankConfig(&lonely, 2, waiting, 0, &config), hclInProgress);
    // Until its bootstrap connection shows (the root's end of it included).
    for (int i = 0; i < 10000; ++i) {
      int sockets = 0;
      for (const auto& [fd, target] : openDescriptors()) {
        sockets += socketsBefore.count(target) == 0 && target.starts_with("socket:");
      }
      if (sockets >= 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rc = onThreads(3, [&](int r) {
      std::vector<float> v(1 << 16, 1.0f);
      return hclAllReduce(v.data(), v.data(), v.size(), hclFloat, hclSum, comms[static_cast<size_t>(r)], nullptr) ==
                     hclSuccess
                 ? 0
                 : 1;
    });
    EXPECT_EQ(rc, std::vector<int>(3, 0));
    int checked = 0;
    for (const auto& [fd, target] : openDescriptors()) {
      if (const auto it = before.find(fd); it != before.end() && it->second == target) continue;
      const int flags = ::fcntl(fd, F_GETFD);
      if (flags < 0) continue;  // the directory listing's own, closed by now
      ++checked;
      EXPECT_NE(flags & FD_CLOEXEC, 0) << "fd " << fd << " -> " << target;
    }
    EXPECT_GT(checked, 3);
    EXPECT_EQ(hclCommAbort(lonely), hclSuccess);
    destroyAll(comms);
  }
}

TEST(Threads, TcpBetweenThreadsWhenSharedMemoryIsDisabled) {
  setenv("HCL_SHM_DISABLE", "1", 1);
  auto comms = initAll(3);
  unsetenv("HCL_SHM_DISABLE");
  char text[4096];
  size_t needed = 0;
  ASSERT_EQ(hclCommDescribeLinks(comms[0], text, sizeof text, &needed), hclSuccess);
  EXPECT_NE(std::string(text).find("tcp"), std::string::npos) << text;
  hcltest::CheckConfig cfg;
  cfg.bigCounts = {};
  auto rc = onThreads(3, [&](int r) { return hcltest::checkAllCollectives(comms[static_cast<size_t>(r)], cfg); });
  EXPECT_EQ(rc, std::vector<int>(3, 0));
  destroyAll(comms);
}

}  // namespace

namespace {

// NCCL lets an operator be destroyed right after the call that uses it is
// enqueued; a pointer scalar is still read when the operation runs.
TEST(Threads, PreMulSumDestroyedBeforeTheGroupRuns) {
  const int n = 2;
  auto comms = initAll(n);
  auto rc = onThreads(n, [&](int r) {
    double scalar = 0;  // set after the call is enqueued: must be read at run time
    hclRedOp_t op;
    if (hclRedOpCreatePreMulSum(&op, &scalar, hclDouble, hclScalarDevice, comms[r]) != hclSuccess) return 1;
    double v = r + 1;
    hclGroupStart();
    if (hclAllReduce(&v, &v, 1, hclDouble, op, comms[r], nullptr) != hclSuccess) return 2;
    if (hclRedOpDestroy(op, comms[r]) != hclSuccess) return 3;
    scalar = 10;
    if (hclGroupEnd() != hclSuccess) return 4;
    return v == 30.0 ? 0 : 5;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

// Buffers from malloc, hclMemAlloc, the stack and a mapped file all work,
// mixed across ranks of one collective.
TEST(Threads, EveryKindOfHostBuffer) {
  const int n = 4;
  auto comms = initAll(n);
  constexpr size_t kCount = 4099;
  auto rc = onThreads(n, [&](int r) {
    double stackBuf[kCount];
    std::vector<double> heap(kCount);
    void* pooled = nullptr;
    if (hclMemAlloc(&pooled, kCount * sizeof(double)) != hclSuccess) return 1;
    char path[] = "/tmp/hcl-buffer-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, kCount * sizeof(double)) != 0) return 2;
    unlink(path);
    void* mapped = mmap(nullptr, kCount * sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped == MAP_FAILED) return 3;
    double* kinds[] = {heap.data(), static_cast<double*>(pooled), stackBuf, static_cast<double*>(mapped)};
    double* buf = kinds[r % 4];
    for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<double>(r + 1) + static_cast<double>(i);
    int result = 0;
    if (hclAllReduce(buf, buf, kCount, hclDouble, hclSum, comms[r], nullptr) != hclSuccess) result = 4;
    for (size_t i = 0; i < kCount && result == 0; ++i) {
      if (buf[i] != 10.0 + 4.0 * static_cast<double>(i)) result = 5;
    }
    munmap(mapped, kCount * sizeof(double));
    if (hclMemFree(pooled) != hclSuccess) result = 6;
    return result;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

}  // namespace
