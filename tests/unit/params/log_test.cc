#include "core/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/params/test_env.h"

namespace hcl {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "<host>:<pid>:<tid> [<rank>] HCL <LEVEL> <SUBSYS> <message>", split up.
struct LogLine {
  std::string host, pid, tid, rank, level, subsys, message;
};

bool allDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::optional<LogLine> parseLine(const std::string& line) {
  LogLine out;
  const auto space = line.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const std::string who = line.substr(0, space);
  const auto c2 = who.rfind(':');
  const auto c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : who.rfind(':', c2 - 1);
  if (c1 == std::string::npos) return std::nullopt;
  out.host = who.substr(0, c1);
  out.pid = who.substr(c1 + 1, c2 - c1 - 1);
  out.tid = who.substr(c2 + 1);
  if (out.host.empty() || !allDigits(out.pid) || !allDigits(out.tid)) return std::nullopt;
  std::string rest = line.substr(space + 1);
  if (rest.starts_with("[")) {
    const auto close = rest.find("] ");
    if (close == std::string::npos) return std::nullopt;
    out.rank = rest.substr(1, close - 1);
    if (!allDigits(out.rank)) return std::nullopt;
    rest = rest.substr(close + 2);
  }
  if (!rest.starts_with("HCL ")) return std::nullopt;
  rest = rest.substr(4);
  const auto s1 = rest.find(' ');
  const auto s2 = s1 == std::string::npos ? s1 : rest.find(' ', s1 + 1);
  if (s2 == std::string::npos) return std::nullopt;
  out.level = rest.substr(0, s1);
  out.subsys = rest.substr(s1 + 1, s2 - s1 - 1);
  out.message = rest.substr(s2 + 1);
  return out;
}

std::string shortHostName() {
  char host[HOST_NAME_MAX + 1] = {};
  ::gethostname(host, sizeof host - 1);
  host[std::strcspn(host, ".")] = '\0';
  return host;
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::writeFile(dir_.file("empty.conf"), "");
    ::setenv("HCL_CONF_FILE", dir_.file("empty.conf").c_str(), 1);
    ::setenv("HCL_DEBUG", "INFO", 1);
    ::setenv("HCL_DEBUG_FILE", dir_.file("hcl.%p.log").c_str(), 1);
    log::reset();
  }
  void TearDown() override {
    log::setThreadRank(-1);
    ::unsetenv("HCL_DEBUG_FILE");
    log::reset();  // closes the file before the scratch dir goes
  }
  // The lines written so far (the file stays open; every line is one write()).
  std::vector<std::string> logged() const { return lines(test::readFile(logPath_)); }

  test::CleanEnv env_;
  test::ScratchDir dir_;
  std::string logPath_ = dir_.file("hcl." + std::to_string(::getpid()) + ".log");
};

TEST_F(LogTest, LineFormat) {
  log::info(log::Init, "hello {} {}", 42, "world");
  log::setThreadRank(3);
  log::warn(log::Net, "ranked line\n");
  const auto got = logged();
  ASSERT_EQ(got.size(), 2u) << test::readFile(logPath_);
  const auto plain = parseLine(got[0]);
  ASSERT_TRUE(plain) << got[0];
  EXPECT_EQ(plain->host, shortHostName());
  EXPECT_EQ(plain->pid, std::to_string(::getpid()));
  EXPECT_EQ(plain->tid, std::to_string(::gettid()));
  EXPECT_EQ(plain->rank, "");
  EXPECT_EQ(plain->level, "INFO");
  EXPECT_EQ(plain->subsys, "INIT");
  EXPECT_EQ(plain->message, "hello 42 world");
  EXPECT_EQ(got[0], plain->host + ":" + plain->pid + ":" + plain->tid + " HCL INFO INIT hello 42 world");

  const auto ranked = parseLine(got[1]);
  ASSERT_TRUE(ranked) << got[1];
  EXPECT_EQ(ranked->rank, "3");
  EXPECT_EQ(ranked->level, "WARN");
  EXPECT_EQ(ranked->subsys, "NET");
  EXPECT_EQ(ranked->message, "ranked line");  // the trailing newline is not doubled
  EXPECT_NE(got[1].find(" [3] HCL WARN NET ranked line"), std::string::npos) << got[1];
}

TEST_F(LogTest, DefaultSubsystemsAreInitBootstrapEnv) {
  EXPECT_TRUE(log::enabled(log::Level::Info, log::Init));
  EXPECT_TRUE(log::enabled(log::Level::Info, log::Bootstrap));
  EXPECT_TRUE(log::enabled(log::Level::Info, log::Env));
  EXPECT_FALSE(log::enabled(log::Level::Info, log::Net));
  EXPECT_FALSE(log::enabled(log::Level::Trace, log::Init));  // level INFO
  log::info(log::Coll, "filtered out");
  log::info(log::Bootstrap, "kept");
  const auto got = logged();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("HCL INFO BOOTSTRAP kept"), std::string::npos);
}

TEST_F(LogTest, InvertedSubsystemFilter) {
  ::setenv("HCL_DEBUG_SUBSYS", "^NET, coll", 1);
  log::reset();
  EXPECT_FALSE(log::enabled(log::Level::Info, log::Net));
  EXPECT_FALSE(log::enabled(log::Level::Info, log::Coll));
  EXPECT_TRUE(log::enabled(log::Level::Info, log::P2P));
  EXPECT_TRUE(log::enabled(log::Level::Warn, log::Net));  // WARN ignores the filter
  log::info(log::Net, "net info");
  log::info(log::Coll, "coll info");
  log::info(log::Shm, "shm info");
  log::warn(log::Net, "net warn");
  const auto got = logged();
  ASSERT_EQ(got.size(), 2u) << test::readFile(logPath_);
  EXPECT_NE(got[0].find("HCL INFO SHM shm info"), std::string::npos);
  EXPECT_NE(got[1].find("HCL WARN NET net warn"), std::string::npos);
}

TEST_F(LogTest, SubsystemListAndAll) {
  ::setenv("HCL_DEBUG_SUBSYS", "NET,P2P", 1);
  log::reset();
  EXPECT_TRUE(log::enabled(log::Level::Info, log::Net));
  EXPECT_TRUE(log::enabled(log::Level::Info, log::P2P));
  EXPECT_FALSE(log::enabled(log::Level::Info, log::Init));
  ::setenv("HCL_DEBUG_SUBSYS", "ALL", 1);
  log::reset();
  EXPECT_TRUE(log::enabled(log::Level::Info, log::Destroy));
  EXPECT_TRUE(log::enabled(log::Level::Info, log::Proxy));
}

TEST_F(LogTest, LevelsAndNcclAlias) {
  ::unsetenv("HCL_DEBUG");
  log::reset();
  EXPECT_EQ(log::currentLevel(), log::Level::Warn);  // the default
  EXPECT_TRUE(log::enabled(log::Level::Warn, log::Init));
  EXPECT_FALSE(log::enabled(log::Level::Info, log::Init));

  ::setenv("NCCL_DEBUG", "trace", 1);
  log::reset();
  EXPECT_EQ(log::currentLevel(), log::Level::Trace);
  EXPECT_TRUE(log::enabled(log::Level::Trace, log::Init));

  ::setenv("HCL_DEBUG", "VERSION", 1);  // HCL_ wins over NCCL_
  log::reset();
  EXPECT_EQ(log::currentLevel(), log::Level::Version);
  EXPECT_TRUE(log::enabled(log::Level::Version, log::Net));
  EXPECT_FALSE(log::enabled(log::Level::Warn, log::Init));

  ::setenv("HCL_DEBUG", "NONE", 1);
  log::reset();
  EXPECT_FALSE(log::enabled(log::Level::Warn, log::Init));
  EXPECT_FALSE(log::enabled(log::Level::Version, log::Init));
}

// A disabled level is refused inline, below the settings' level: after a
// reset, the first check must still read the new settings.
TEST_F(LogTest, ALevelRaisedByAResetHoldsFromTheFirstCheck) {
  ::setenv("HCL_DEBUG", "WARN", 1);
  log::reset();
  EXPECT_FALSE(log::enabled(log::Level::Trace, log::Coll));
  ::setenv("HCL_DEBUG", "TRACE", 1);
  ::setenv("HCL_DEBUG_SUBSYS", "COLL", 1);
  log::reset();
  EXPECT_TRUE(log::enabled(log::Level::Trace, log::Coll));
  log::trace(log::Coll, "traced");
  const auto got = logged();
  ASSERT_EQ(got.size(), 1u) << test::readFile(logPath_);
  EXPECT_NE(got[0].find("HCL TRACE COLL traced"), std::string::npos) << got[0];
}

TEST_F(LogTest, VersionLevelPrintsTheVersionAndNothingElse) {
  ::setenv("HCL_DEBUG", "VERSION", 1);
  log::reset();
  log::warn(log::Init, "a warning");
  log::info(log::Init, "some info");
  const auto got = logged();
  ASSERT_EQ(got.size(), 1u) << test::readFile(logPath_);
  const auto line = parseLine(got[0]);
  ASSERT_TRUE(line) << got[0];
  EXPECT_EQ(line->level, "VERSION");
  EXPECT_EQ(line->message, log::versionText());
  EXPECT_EQ(line->message.rfind("HCL version ", 0), 0u) << line->message;
}

TEST_F(LogTest, UnknownLevelFallsBackToWarnAndSaysSo) {
  ::setenv("HCL_DEBUG", "LOUD", 1);
  log::reset();
  EXPECT_EQ(log::currentLevel(), log::Level::Warn);
  const auto got = logged();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("HCL WARN ENV Unknown HCL_DEBUG level 'LOUD'"), std::string::npos);
}

TEST_F(LogTest, ConfigFileProblemsAreWarnedWhenTheSettingsAreRead) {
  test::writeFile(dir_.file("empty.conf"), "HCL_TIMEOUT_M=5\n");
  log::reset();
  log::warn(log::Init, "first line");
  const auto got = logged();
  ASSERT_EQ(got.size(), 2u) << test::readFile(logPath_);
  EXPECT_NE(got[0].find("HCL WARN ENV config file "), std::string::npos) << got[0];
  EXPECT_NE(got[0].find("line 1: 'HCL_TIMEOUT_M=5' names no HCL parameter"), std::string::npos) << got[0];
  EXPECT_NE(got[1].find("first line"), std::string::npos);

  ::setenv("HCL_CONF_FILE", dir_.file("missing.conf").c_str(), 1);
  log::reset();
  log::warn(log::Init, "second line");
  const auto after = logged();
  ASSERT_EQ(after.size(), 4u) << test::readFile(logPath_);
  EXPECT_NE(after[2].find("missing.conf (from HCL_CONF_FILE): No such file or directory"), std::string::npos)
      << after[2];
}

TEST_F(LogTest, HostnameInFileName) {
  ::setenv("HCL_DEBUG_FILE", dir_.file("log.%h.%%").c_str(), 1);
  log::reset();
  log::warn(log::Init, "to host file");
  const std::string text = test::readFile(dir_.file("log." + shortHostName() + ".%"));
  EXPECT_NE(text.find("to host file"), std::string::npos);
}

TEST_F(LogTest, UnopenableFileFallsBackToStderr) {
  ::setenv("HCL_DEBUG_FILE", dir_.file("no/such/dir/x.log").c_str(), 1);
  ::testing::internal::CaptureStderr();
  log::reset();
  log::warn(log::Net, "still visible");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Cannot open HCL_DEBUG_FILE"), std::string::npos) << err;
  EXPECT_NE(err.find("HCL WARN NET still visible"), std::string::npos) << err;
}

TEST_F(LogTest, ConcurrentLinesDoNotInterleave) {
  constexpr int kThreads = 4, kLines = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      log::setThreadRank(t);
      for (int i = 0; i < kLines; ++i)
        log::info(log::Init, "thread {} line {} {}", t, i, std::string(100, 'x'));
    });
  }
  for (auto& th : threads) th.join();
  const auto got = logged();
  ASSERT_EQ(got.size(), size_t{kThreads * kLines});
  for (const auto& line : got) {
    const auto parsed = parseLine(line);
    ASSERT_TRUE(parsed) << line;
    EXPECT_EQ(parsed->level, "INFO");
    EXPECT_TRUE(parsed->message.starts_with("thread " + parsed->rank + " line ")) << line;
    EXPECT_TRUE(parsed->message.ends_with(" " + std::string(100, 'x'))) << line;
  }
}

}  // namespace
}  // namespace hcl
