// The descriptor limit is raised for a communicator's links, and a hard
// limit too low for them is named. Each case runs in a forked child, since
// the limit belongs to the process.
#include "core/fd_limit.h"

#include <gmock/gmock.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace hcl {
namespace {

using ::testing::HasSubstr;

// Runs `body` in a child; its text comes back, and its exit code is 0 for a pass.
std::string inChild(const std::function<std::string()>& body, int* code) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    const std::string text = body();
    (void)!::write(fds[1], text.data(), text.size());
    ::_exit(text.rfind("ok", 0) == 0 ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return text;
}

rlimit current() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  return limit;
}

TEST(FdLimit, CountsTheDescriptorsOpen) {
  const size_t before = openDescriptors();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(openDescriptors(), before + 2);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(openDescriptors(), before);
}

// What counts them where /proc is not mounted.
TEST(FdLimit, AskingEachNumberCountsTheSame) {
  EXPECT_EQ(openDescriptorsByAsking(), openDescriptors());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_EQ(openDescriptorsByAsking(), openDescriptors());
  ::close(fds[0]);
  ::close(fds[1]);
}

// Asks for room for `wanted` descriptors in all, those open included.
Status roomInAll(size_t wanted, DescriptorClaim& claim) {
  return ensureDescriptorRoom(3, wanted - openDescriptors(), "this communicator's links", claim);
}

// The soft limit a child has after asking for room for `wanted` with its
// soft limit at `soft`, as "ok <limit>", or what went wrong.
std::string softLimitAfter(rlim_t soft, size_t wanted, int* code) {
  return inChild(
      [&] {
        rlimit limit = current();
        limit.rlim_cur = soft;
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return std::string("setrlimit failed");
        DescriptorClaim claim;
        if (Status s = roomInAll(wanted, claim); !s.ok()) return s.message();
        return "ok " + std::to_string(current().rlim_cur);
      },
      code);
}

TEST(FdLimit, RaisesALowSoftLimitToTwiceWhatTheLinksNeed) {
  if (current().rlim_max != RLIM_INFINITY && current().rlim_max < 2000) GTEST_SKIP() << "hard limit below 2000";
  int code = 0;
  const std::string text = softLimitAfter(64, 1000, &code);
  EXPECT_EQ(code, 0) << text;
  EXPECT_EQ(text, "ok 2000");
}

TEST(FdLimit, LeavesALimitThatSufficesAlone) {
  if (current().rlim_max != RLIM_INFINITY && current().rlim_max < 512) GTEST_SKIP() << "hard limit below 512";
  int code = 0;
  const std::string text = softLimitAfter(512, 500, &code);
  EXPECT_EQ(code, 0) << text;
  EXPECT_EQ(text, "ok 512");
}

// Below the hard limit, the soft one is raised to it all the same (the
// count is an upper estimate), and both are named.
TEST(FdLimit, NamesAHardLimitTooLowAndRaisesTheSoftLimitToIt) {
  int code = 0;
  const std::string text = inChild(
      [] {
        const rlimit limit{64, 100};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return std::string("setrlimit failed");
        DescriptorClaim claim;
        const Status s = roomInAll(1000, claim);
        if (s.ok()) return std::string("no error");
        if (current().rlim_cur != 100) return "the soft limit is " + std::to_string(current().rlim_cur);
        return "ok " + s.message();
      },
      &code);
  EXPECT_EQ(code, 0) << text;
  EXPECT_THAT(text, HasSubstr("rank 3: about 1000 file descriptors are needed in all, for this communicator's links"));
  EXPECT_THAT(text, HasSubstr("hard limit 100, soft limit 100, raised from 64"));
  EXPECT_THAT(text, HasSubstr("HCL_PEER_WATCH=0"));
}

// Two setups of one process at once (ranks of one process initialising
// together): the second makes room for the first's claim too, until the
// first lets go of it; what they share counts once.
TEST(FdLimit, CountsWhatOtherSetupsOfTheProcessClaimed) {
  if (current().rlim_max != RLIM_INFINITY && current().rlim_max < 16000) GTEST_SKIP() << "hard limit below 16000";
  int code = 0;
  const std::string text = inChild(
      [] {
        rlimit limit = current();
        limit.rlim_cur = 64;
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return std::string("setrlimit failed");
        const size_t open = openDescriptors();
        DescriptorClaim first;
        if (Status s = ensureDescriptorRoom(3, 1000, "the first", first); !s.ok()) return s.message();
        if (current().rlim_cur != 2 * (open + 1000)) return "first: " + std::to_string(current().rlim_cur);
        DescriptorClaim second;
        if (Status s = ensureDescriptorRoom(4, 2000, "the second", second); !s.ok()) return s.message();
        if (current().rlim_cur != 2 * (open + 3000)) return "second: " + std::to_string(current().rlim_cur);
        // A claim moved keeps counting; one dropped no longer does.
        DescriptorClaim moved = std::move(first);
        first = DescriptorClaim();
        DescriptorClaim third;
        if (Status s = ensureDescriptorRoom(5, 4000, "the third", third); !s.ok()) return s.message();
        if (current().rlim_cur != 2 * (open + 7000)) return "third: " + std::to_string(current().rlim_cur);
        moved = DescriptorClaim();
        second = DescriptorClaim();
        DescriptorClaim fourth;
        if (Status s = ensureDescriptorRoom(6, 100, "the fourth", fourth); !s.ok()) return s.message();
        third = DescriptorClaim();
        fourth = DescriptorClaim();
        // Limits are never lowered, so the claims left are asked for again.
        limit = current();
        limit.rlim_cur = 64;
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return std::string("setrlimit failed");
        DescriptorClaim alone;
        if (Status s = ensureDescriptorRoom(7, 500, "alone", alone); !s.ok()) return s.message();
        if (current().rlim_cur != 2 * (open + 500)) return "alone: " + std::to_string(current().rlim_cur);
        // What setups share (a bootstrap root in the process) counts once
        // in each, never summed over them.
        DescriptorClaim rootA, rootB;
        if (Status s = ensureDescriptorRoom(8, 0, "a root's", rootA, 3000); !s.ok()) return s.message();
        if (Status s = ensureDescriptorRoom(9, 0, "a root's", rootB, 3000); !s.ok()) return s.message();
        if (current().rlim_cur != 2 * (open + 3500)) return "shared: " + std::to_string(current().rlim_cur);
        return std::string("ok");
      },
      &code);
  EXPECT_EQ(code, 0) << text;
}

TEST(FdLimit, HCL_RAISE_FD_LIMIT_0_LeavesTheLimitAlone) {
  int code = 0;
  const std::string text = inChild(
      [] {
        ::setenv("HCL_RAISE_FD_LIMIT", "0", 1);
        rlimit limit = current();
        limit.rlim_cur = 64;
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return std::string("setrlimit failed");
        DescriptorClaim claim;
        if (Status s = roomInAll(1000, claim); !s.ok()) return s.message();
        return "ok " + std::to_string(current().rlim_cur);
      },
      &code);
  EXPECT_EQ(code, 0) << text;
  EXPECT_EQ(text, "ok 64");
}

}  // namespace
}  // namespace hcl
