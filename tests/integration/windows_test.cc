// hclCommWindowRegister/Deregister with ranks as threads: a collective
// registration that all ranks must agree on, used by collectives, inside a
// group from one thread, and a rank that never registers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hcl.h"
#include "thread_ranks.h"

namespace {

using hcltest::destroyAll;
using hcltest::initAll;
using hcltest::onThreads;

bool contains(const char* text, const std::string& part) { return std::string(text).find(part) != std::string::npos; }

TEST(Windows, EveryRankRegistersAndCollectivesRunOnTheWindows) {
  constexpr int n = 3;
  constexpr size_t count = 1024;
  auto comms = initAll(n);
  std::vector<float*> buffers(n, nullptr);
  std::vector<hclWindow_t> windows(n, nullptr);
  auto rc = onThreads(n, [&](int r) -> int {
    const size_t i = static_cast<size_t>(r);
    void* p = nullptr;
    if (hclMemAlloc(&p, count * sizeof(float)) != hclSuccess) return 1;
    buffers[i] = static_cast<float*>(p);
    if (hclCommWindowRegister(comms[i], p, count * sizeof(float), &windows[i], HCL_WIN_COLL_SYMMETRIC) != hclSuccess)
      return 2;
    for (size_t k = 0; k < count; ++k) buffers[i][k] = static_cast<float>(r + 1) * static_cast<float>(k % 7);
    if (hclAllReduce(p, p, count, hclFloat, hclSum, comms[i], nullptr) != hclSuccess) return 3;
    for (size_t k = 0; k < count; ++k) {
      if (buffers[i][k] != 6.0f * static_cast<float>(k % 7)) return 4;  // 1 + 2 + 3
    }
    return 0;
  });
  ASSERT_EQ(rc, std::vector<int>(n, 0)) << hclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) {
    EXPECT_NE(windows[static_cast<size_t>(r)], nullptr);
    for (int q = 0; q < r; ++q) EXPECT_NE(windows[static_cast<size_t>(r)], windows[static_cast<size_t>(q)]);
  }
  // A window belongs to its communicator, and goes once.
  EXPECT_EQ(hclCommWindowDeregister(comms[1], windows[0]), hclInvalidUsage);
  EXPECT_TRUE(contains(hclGetLastError(comms[1]), "hclCommWindowDeregister: win ")) << hclGetLastError(comms[1]);
  EXPECT_TRUE(contains(hclGetLastError(comms[1]), "is not a window of this communicator")) << hclGetLastError(comms[1]);
  for (int r = 0; r < n; ++r) {
    const size_t i = static_cast<size_t>(r);
    EXPECT_EQ(hclCommWindowDeregister(comms[i], windows[i]), hclSuccess) << hclGetLastError(comms[i]);
  }
  EXPECT_EQ(hclCommWindowDeregister(comms[0], windows[0]), hclInvalidUsage);
  destroyAll(comms);
  for (float* p : buffers) EXPECT_EQ(hclMemFree(p), hclSuccess);
}

TEST(Windows, RanksThatDisagreeFailTogetherAndKeepTheCommunicator) {
  constexpr int n = 2;
  auto comms = initAll(n);
  std::vector<std::vector<char>> memory(n, std::vector<char>(8192));
  std::vector<std::string> errors(n);
  auto registerAll = [&](const std::function<size_t(int)>& bytesOf, const std::function<int(int)>& flagsOf) {
    return onThreads(n, [&](int r) -> int {
      const size_t i = static_cast<size_t>(r);
      hclWindow_t w = nullptr;
      const hclResult_t res = hclCommWindowRegister(comms[i], memory[i].data(), bytesOf(r), &w, flagsOf(r));
      errors[i] = hclGetLastError(comms[i]);
      if (res == hclSuccess) return hclCommWindowDeregister(comms[i], w) == hclSuccess ? 0 : 99;
      return w == nullptr ? static_cast<int>(res) : 98;
    });
  };
  auto rc = registerAll([](int) { return size_t{4096}; }, [](int r) { return r == 0 ? HCL_WIN_DEFAULT : HCL_WIN_COLL_SYMMETRIC; });
  EXPECT_EQ(rc, std::vector<int>(n, hclInvalidUsage));
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("hclCommWindowRegister: ranks disagree on winFlags: rank 0 passed 0x0, rank 1 passed 0x1"),
              std::string::npos)
        << e;
  }
  rc = registerAll([](int r) { return size_t{4096} * static_cast<size_t>(r + 1); },
                   [](int) { return HCL_WIN_COLL_SYMMETRIC; });
  EXPECT_EQ(rc, std::vector<int>(n, hclInvalidUsage));
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("needs one size on every rank: rank 0 registers 4096 bytes, rank 1 registers 8192"),
              std::string::npos)
        << e;
  }
  // Windows without the symmetric flag may differ in size.
  rc = registerAll([](int r) { return size_t{4096} * static_cast<size_t>(r + 1); }, [](int) { return HCL_WIN_DEFAULT; });
  EXPECT_EQ(rc, std::vector<int>(n, 0)) << errors[0];
  // A refused registration does not break the communicator.
  rc = onThreads(n, [&](int r) -> int {
    int32_t v = r + 1;
    if (hclAllReduce(&v, &v, 1, hclInt32, hclSum, comms[static_cast<size_t>(r)], nullptr) != hclSuccess) return 1;
    return v == 3 ? 0 : 2;
  });
  EXPECT_EQ(rc, std::vector<int>(n, 0));
  destroyAll(comms);
}

TEST(Windows, ArgumentsAreChecked) {
  auto comms = initAll(1);
  std::vector<char> buf(4096);
  hclWindow_t w = nullptr;
  EXPECT_EQ(hclCommWindowRegister(nullptr, buf.data(), buf.size(), &w, HCL_WIN_DEFAULT), hclInvalidArgument);
  EXPECT_EQ(std::string(hclGetLastError(nullptr)).rfind("hclCommWindowRegister: comm is NULL", 0), 0u)
      << hclGetLastError(nullptr);
  EXPECT_EQ(hclCommWindowRegister(comms[0], buf.data(), buf.size(), nullptr, HCL_WIN_DEFAULT), hclInvalidArgument);
  EXPECT_TRUE(contains(hclGetLastError(comms[0]), "hclCommWindowRegister: win is NULL")) << hclGetLastError(comms[0]);
  EXPECT_EQ(hclCommWindowRegister(comms[0], nullptr, 64, &w, HCL_WIN_DEFAULT), hclInvalidArgument);
  EXPECT_TRUE(contains(hclGetLastError(comms[0]), "hclCommWindowRegister: buff is NULL with size 64"))
      << hclGetLastError(comms[0]);
  EXPECT_EQ(hclCommWindowRegister(comms[0], buf.data(), buf.size(), &w, 0x6), hclInvalidArgument);
  EXPECT_TRUE(contains(hclGetLastError(comms[0]), "hclCommWindowRegister: winFlags 0x6 is not")) << hclGetLastError(comms[0]);
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(hclCommWindowDeregister(comms[0], nullptr), hclInvalidArgument);
  EXPECT_TRUE(contains(hclGetLastError(comms[0]), "hclCommWindowDeregister: win is NULL")) << hclGetLastError(comms[0]);
  // One rank alone registers with itself; an empty window is allowed.
  ASSERT_EQ(hclCommWindowRegister(comms[0], nullptr, 0, &w, HCL_WIN_DEFAULT), hclSuccess) << hclGetLastError(comms[0]);
  EXPECT_NE(w, nullptr);
  EXPECT_EQ(hclCommWindowDeregister(comms[0], w), hclSuccess);
  destroyAll(comms);
}

// As NCCL: inside a group the registration runs at hclGroupEnd, so one
// thread can register for every rank, and *win is filled then.
TEST(Windows, OneThreadRegistersEveryRankInAGroup) {
  constexpr int n = 3;
  auto comms = initAll(n);
  std::vector<std::vector<int32_t>> data(n, std::vector<int32_t>(256));
  std::vector<hclWindow_t> windows(n, nullptr);
  ASSERT_EQ(hclGroupStart(), hclSuccess);
  for (size_t r = 0; r < n; ++r) {
    ASSERT_EQ(hclCommWindowRegister(comms[r], data[r].data(), data[r].size() * sizeof(int32_t), &windows[r],
                                    HCL_WIN_COLL_SYMMETRIC),
              hclSuccess);
    EXPECT_EQ(windows[r], nullptr) << "filled at hclGroupEnd";
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t k = 0; k < data[r].size(); ++k) data[r][k] = static_cast<int32_t>(r * 1000 + k);
    ASSERT_EQ(hclAllReduce(data[r].data(), data[r].data(), data[r].size(), hclInt32, hclMax, comms[r], nullptr),
              hclSuccess);
  }
  ASSERT_EQ(hclGroupEnd(), hclSuccess) << hclGetLastError(nullptr);
  for (size_t r = 0; r < n; ++r) {
    EXPECT_NE(windows[r], nullptr);
    EXPECT_EQ(data[r][5], 2005);
    EXPECT_EQ(hclCommWindowDeregister(comms[r], windows[r]), hclSuccess) << hclGetLastError(comms[r]);
  }
  destroyAll(comms);
}

// A collective call: a rank that never registers fails the others within
// the communicator's timeout instead of leaving them waiting.
TEST(Windows, ARankThatNeverRegistersFailsTheOthers) {
  setenv("HCL_TIMEOUT_MS", "1500", 1);
  auto comms = initAll(2);
  unsetenv("HCL_TIMEOUT_MS");
  std::vector<char> buf(4096);
  hclWindow_t w = nullptr;
  const hclResult_t res = hclCommWindowRegister(comms[0], buf.data(), buf.size(), &w, HCL_WIN_DEFAULT);
  EXPECT_EQ(res, hclRemoteError);
  EXPECT_EQ(w, nullptr);
  const std::string text = hclGetLastError(comms[0]);
  EXPECT_EQ(text.rfind("hclCommWindowRegister: ", 0), 0u) << text;
  EXPECT_EQ(text.find("hclCommWindowRegister: hclCommWindowRegister"), std::string::npos) << text;
  EXPECT_NE(text.find("waiting for rank 1"), std::string::npos) << text;
  destroyAll(comms);
}

}  // namespace
