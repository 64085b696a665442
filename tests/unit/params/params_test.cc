#include "core/params.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/log.h"
#include "tests/unit/params/test_env.h"

namespace hcl {
namespace {

class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("HCL_CONF_FILE", conf_.c_str(), 1); }
  void writeConf(const std::string& text) { test::writeFile(conf_, text); }
  // What the log says while fn() runs.
  std::string logOf(const std::function<void()>& fn) {
    const std::string logPath = dir_.file("params.log");
    ::setenv("HCL_DEBUG_FILE", logPath.c_str(), 1);
    log::reset();
    fn();
    ::unsetenv("HCL_DEBUG_FILE");
    log::reset();
    return test::readFile(logPath);
  }

  test::CleanEnv env_;
  test::ScratchDir dir_;
  std::string conf_ = dir_.file("hcl.conf");
};

TEST(ParamTable, RowsAreWellFormed) {
  std::set<std::string> names;
  for (const ParamSpec& spec : paramTable()) {
    SCOPED_TRACE(spec.name);
    EXPECT_TRUE(std::string_view(spec.name).starts_with("HCL_"));
    EXPECT_TRUE(names.insert(spec.name).second) << "duplicate row";
    if (spec.ncclAlias != nullptr) {
      EXPECT_TRUE(std::string_view(spec.ncclAlias).starts_with("NCCL_"));
    }
    ASSERT_NE(spec.help, nullptr);
    EXPECT_GT(std::string_view(spec.help).size(), 5u);
    ASSERT_NE(spec.defaultValue, nullptr);
    if (spec.type == ParamType::Int) {
      EXPECT_TRUE(parseParamInt(spec.defaultValue).has_value());
    }
    if (spec.type == ParamType::Bool) {
      EXPECT_TRUE(parseParamBool(spec.defaultValue).has_value());
    }
    EXPECT_EQ(findParam(spec.name), &spec);
  }
  EXPECT_GE(names.size(), 19u);
  EXPECT_EQ(findParam("HCL_NO_SUCH_KNOB"), nullptr);
}

TEST(ParamTable, ProgrammingErrorsThrow) {
  EXPECT_THROW(resolveParam("HCL_NO_SUCH_KNOB"), std::logic_error);
  EXPECT_THROW(paramInt("HCL_NO_SUCH_KNOB"), std::logic_error);
  EXPECT_THROW(paramInt("NCCL_DEBUG"), std::logic_error);  // aliases are not names
  EXPECT_THROW(paramInt("HCL_DEBUG"), std::logic_error);
  EXPECT_THROW(paramBool("HCL_TIMEOUT_MS"), std::logic_error);
  EXPECT_THROW(paramInt("HCL_SHM_DISABLE"), std::logic_error);
}

TEST_F(ParamsTest, DefaultsWhenNothingIsSet) {
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
  EXPECT_EQ(paramInt("HCL_SHM_CMA_THRESHOLD"), 65536);
  EXPECT_EQ(paramInt("HCL_CHUNK_BYTES"), 524288);
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 8);
  EXPECT_FALSE(paramBool("HCL_SHM_DISABLE"));
  EXPECT_TRUE(paramBool("HCL_COMM_BLOCKING"));
  EXPECT_EQ(paramString("HCL_DEBUG_SUBSYS"), "INIT,BOOTSTRAP,ENV");
  const ParamValue v = resolveParam("HCL_DEBUG");
  EXPECT_EQ(v.text, "");
  EXPECT_EQ(v.source, ParamSource::Default);
  EXPECT_EQ(v.origin, "");
  EXPECT_EQ(paramSourceName(v), "default");
}

TEST_F(ParamsTest, LookupOrderEnvThenAliasThenConfigThenDefault) {
  writeConf("HCL_SOCKET_IFNAME=conf0\n");
  ::setenv("HCL_SOCKET_IFNAME", "hcl0", 1);
  ::setenv("NCCL_SOCKET_IFNAME", "nccl0", 1);

  ParamValue v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "hcl0");
  EXPECT_EQ(v.source, ParamSource::Env);
  EXPECT_EQ(paramSourceName(v), "env");

  ::unsetenv("HCL_SOCKET_IFNAME");
  v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "nccl0");
  EXPECT_EQ(v.source, ParamSource::NcclEnv);
  EXPECT_EQ(v.origin, "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(paramSourceName(v), "NCCL env (NCCL_SOCKET_IFNAME)");

  ::unsetenv("NCCL_SOCKET_IFNAME");
  v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "conf0");
  EXPECT_EQ(v.source, ParamSource::ConfigFile);
  EXPECT_EQ(paramSourceName(v), "config file");

  writeConf("# nothing here any more\n");
  v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "");
  EXPECT_EQ(v.source, ParamSource::Default);
}

TEST_F(ParamsTest, IntEnvIsSeenOnEveryCall) {
  ::setenv("HCL_TIMEOUT_MS", "1500", 1);
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 1500);
  ::setenv("HCL_TIMEOUT_MS", "2500", 1);
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 2500);
  ::setenv("HCL_CHUNK_BYTES", "1M", 1);
  EXPECT_EQ(paramInt("HCL_CHUNK_BYTES"), 1 << 20);
}

TEST_F(ParamsTest, EmptyEnvironmentValueCountsAsUnset) {
  writeConf("HCL_ALGO=ring\n");
  ::setenv("HCL_ALGO", "", 1);
  ::setenv("NCCL_ALGO", "", 1);
  const ParamValue v = resolveParam("HCL_ALGO");
  EXPECT_EQ(v.text, "ring");
  EXPECT_EQ(v.source, ParamSource::ConfigFile);
}

TEST_F(ParamsTest, ConfigFileAcceptsNcclKeysButHclKeysWin) {
  writeConf("NCCL_ALGO=tree\n");
  ParamValue v = resolveParam("HCL_ALGO");
  EXPECT_EQ(v.text, "tree");
  EXPECT_EQ(v.source, ParamSource::ConfigFile);
  EXPECT_EQ(v.origin, "NCCL_ALGO");
  EXPECT_EQ(paramSourceName(v), "config file (NCCL_ALGO)");

  writeConf("HCL_ALGO=ring\nNCCL_ALGO=tree\n");
  v = resolveParam("HCL_ALGO");
  EXPECT_EQ(v.text, "ring");
  EXPECT_EQ(v.origin, "HCL_ALGO");
}

TEST_F(ParamsTest, ConfigFileSyntax) {
  writeConf(
      "# a comment line\n"
      "   # an indented comment\n"
      "\n"
      "  HCL_TIMEOUT_MS =  7000   # trailing comment\n"
      "HCL_SOCKET_IFNAME=eth#0\n"
      "this line has no equals sign\n"
      "HCL_ALGO=\"ring\"\n"
      "HCL_SPIN_US=10\n"
      "HCL_SPIN_US=20\n"
      "HCL_SHM_SLOTS=4\r\n"
      "HCL_COMM_SECRET=\n"
      "HCL_NOT_IN_TABLE=1\n");
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 7000);
  EXPECT_EQ(paramString("HCL_SOCKET_IFNAME"), "eth#0");
  EXPECT_EQ(paramString("HCL_ALGO"), "ring");
  EXPECT_EQ(paramInt("HCL_SPIN_US"), 20);  // the last line wins
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 4);
  EXPECT_EQ(resolveParam("HCL_COMM_SECRET").source, ParamSource::Default);
}

TEST_F(ParamsTest, ConfigFileChangesAreSeen) {
  writeConf("HCL_SHM_SLOTS=3\n");
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 3);
  writeConf("HCL_SHM_SLOTS=16\n");
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 16);
}

TEST_F(ParamsTest, ConfigFilePathFromAliasAndHome) {
  EXPECT_EQ(paramConfigFilePath(), conf_);
  const std::string other = dir_.file("other.conf");
  test::writeFile(other, "HCL_SHM_SLOTS=5\n");
  ::unsetenv("HCL_CONF_FILE");
  ::setenv("NCCL_CONF_FILE", other.c_str(), 1);
  EXPECT_EQ(paramConfigFilePath(), other);
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 5);
  EXPECT_EQ(resolveParam("HCL_CONF_FILE").source, ParamSource::NcclEnv);

  ::unsetenv("NCCL_CONF_FILE");
  const std::string home = dir_.file("home");
  std::filesystem::create_directories(home);
  test::writeFile(home + "/.hcl.conf", "HCL_SHM_SLOTS=6\n");
  ::setenv("HOME", home.c_str(), 1);
  EXPECT_EQ(paramConfigFilePath(), home + "/.hcl.conf");
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 6);
}

TEST(ParamParse, IntegersWithBinarySuffixes) {
  EXPECT_EQ(parseParamInt("0"), 0);
  EXPECT_EQ(parseParamInt("42"), 42);
  EXPECT_EQ(parseParamInt(" 42 "), 42);
  EXPECT_EQ(parseParamInt("-5"), -5);
  EXPECT_EQ(parseParamInt("+7"), 7);
  EXPECT_EQ(parseParamInt("64K"), 65536);
  EXPECT_EQ(parseParamInt("64k"), 65536);
  EXPECT_EQ(parseParamInt("2M"), 2 * 1024 * 1024);
  EXPECT_EQ(parseParamInt("2m"), 2 * 1024 * 1024);
  EXPECT_EQ(parseParamInt("3G"), int64_t{3} << 30);
  EXPECT_EQ(parseParamInt("-1K"), -1024);
  EXPECT_EQ(parseParamInt("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", " ", "abc", "12KB", "1.5K", "K", "0x10", "12 K", "+-5", "--1",
                          "99999999999999999999", "9223372036854775807K", "8G8"}) {
    EXPECT_FALSE(parseParamInt(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ParamParse, Booleans) {
  for (const char* t : {"1", "true", "TRUE", "True", "yes", "YES", "on", "On", " 1 "})
    EXPECT_EQ(parseParamBool(t), std::optional<bool>(true)) << t;
  for (const char* f : {"0", "false", "FALSE", "no", "No", "off", "OFF"})
    EXPECT_EQ(parseParamBool(f), std::optional<bool>(false)) << f;
  for (const char* bad : {"", "2", "maybe", "y", "enable", "truee"})
    EXPECT_FALSE(parseParamBool(bad).has_value()) << bad;
}

TEST_F(ParamsTest, BoolParamsFromEnv) {
  ::setenv("HCL_SHM_DISABLE", "yes", 1);
  EXPECT_TRUE(paramBool("HCL_SHM_DISABLE"));
  ::setenv("HCL_SHM_DISABLE", "Off", 1);
  EXPECT_FALSE(paramBool("HCL_SHM_DISABLE"));
  ::unsetenv("HCL_SHM_DISABLE");
  ::setenv("NCCL_SHM_DISABLE", "1", 1);
  EXPECT_TRUE(paramBool("HCL_SHM_DISABLE"));
  ::setenv("NCCL_COMM_BLOCKING", "0", 1);
  EXPECT_FALSE(paramBool("HCL_COMM_BLOCKING"));
}

TEST_F(ParamsTest, InvalidValuesFallBackToDefaultAndWarnOnce) {
  const std::string text = logOf([&] {
    ::setenv("HCL_TIMEOUT_MS", "soon-ish", 1);
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
    ::setenv("HCL_COMM_BLOCKING", "perhaps", 1);
    EXPECT_TRUE(paramBool("HCL_COMM_BLOCKING"));
    writeConf("HCL_SHM_SLOTS=lots\n");
    EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 8);
  });
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("'soon-ish' for HCL_TIMEOUT_MS"), 1u) << text;
  EXPECT_EQ(count("'perhaps' for HCL_COMM_BLOCKING"), 1u) << text;
  EXPECT_EQ(count("'lots' for HCL_SHM_SLOTS (from config file)"), 1u) << text;
  EXPECT_NE(text.find("HCL WARN ENV Invalid value"), std::string::npos) << text;
}

TEST_F(ParamsTest, OutOfRangeIntegersFallBackToDefaultAndSayWhatIsAccepted) {
  const std::string text = logOf([] {
    ::setenv("HCL_TCP_STREAMS", "65", 1);
    EXPECT_EQ(paramInt("HCL_TCP_STREAMS"), 1);
    ::setenv("HCL_TCP_STREAMS", "64", 1);
    EXPECT_EQ(paramInt("HCL_TCP_STREAMS"), 64);
    ::setenv("HCL_TIMEOUT_MS", "-1", 1);
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
    ::setenv("HCL_TIMEOUT_MS", "0", 1);  // documented: never time out
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 0);
    ::setenv("HCL_CHUNK_BYTES", "0", 1);
    EXPECT_EQ(paramInt("HCL_CHUNK_BYTES"), 524288);
  });
  EXPECT_NE(text.find("'65' for HCL_TCP_STREAMS (from env; accepted: 1 to 64), using default 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("'-1' for HCL_TIMEOUT_MS"), std::string::npos) << text;
  EXPECT_NE(text.find("'0' for HCL_CHUNK_BYTES"), std::string::npos) << text;
  EXPECT_EQ(text.find("'64' for"), std::string::npos) << text;
  EXPECT_EQ(text.find("'0' for HCL_TIMEOUT_MS"), std::string::npos) << text;
}

TEST(ParamTable, DefaultsAreWithinTheirRanges) {
  for (const ParamSpec& spec : paramTable()) {
    if (spec.type != ParamType::Int) continue;
    SCOPED_TRACE(spec.name);
    const auto v = parseParamInt(spec.defaultValue);
    ASSERT_TRUE(v.has_value());
    EXPECT_GE(*v, spec.min);
    EXPECT_LE(*v, spec.max);
  }
}

TEST_F(ParamsTest, ConcurrentLookupsAgree) {
  writeConf("HCL_SHM_SLOTS=12\n");
  ::setenv("HCL_SPIN_US", "7", 1);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 200; ++i) {
        if (paramInt("HCL_SHM_SLOTS") != 12) ++failures[t];
        if (paramInt("HCL_SPIN_US") != 7) ++failures[t];
        if (paramInt("HCL_TIMEOUT_MS") != 60000) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace hcl
